import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { getOperationAST, GraphQLError, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Principal } from '../auth/roles.js';
import { ErrorCode, isAppError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import type { GraphQLContext } from './context.js';
import { formatGraphQLErrors } from './errors.js';
import { guardOperation, type GuardOptions } from './guard.js';

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  httpServer: HttpServer | HttpsServer;
  path: string;
  logger: Logger;
  metrics: AppMetrics;
  guard: Pick<GuardOptions, 'schema' | 'limits' | 'rateLimiter'>;
  /** Authenticates `connection_init`'s payload (`authorization: "Bearer …"`); throws UNAUTHENTICATED. */
  authenticate: (authorization: string | undefined, request: IncomingMessage) => Promise<Principal>;
  context: (principal: Principal, request: IncomingMessage) => Promise<GraphQLContext>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

type Extra = {
  socket: WebSocket;
  request: IncomingMessage;
  principal?: Principal;
};

function authorizationFrom(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.authorization ?? params?.Authorization ?? (params?.token ? `Bearer ${String(params.token)}` : undefined);
  return typeof value === 'string' ? value : undefined;
}

/**
 * graphql-ws on the same port and path as the HTTP endpoint. Clients authenticate in `connection_init`; every
 * subscription passes the same guard as HTTP operations (limits, role); a revoked token's sockets are closed at once.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions) {
  const wsServer = new WebSocketServer({ server: options.httpServer, path: options.path, maxPayload: 1024 * 1024 });
  const { logger, metrics } = options;
  const socketsByToken = new Map<string, Set<WebSocket>>();

  const cleanup = useServer<Record<string, unknown>, Extra>(
    {
      schema: options.schema,
      onConnect: async (ctx) => {
        try {
          const principal = await options.authenticate(authorizationFrom(ctx.connectionParams), ctx.extra.request);
          ctx.extra.principal = principal;
          if (principal.kind === 'token') {
            const sockets = socketsByToken.get(principal.tokenId) ?? new Set();
            sockets.add(ctx.extra.socket);
            socketsByToken.set(principal.tokenId, sockets);
            // A token that expires while its socket is open is as invalid as a revoked one: close it at expiry.
            // (Timers cannot wait longer than about 24 days; a token expiring later is checked when it reconnects.)
            const untilExpiry = principal.expiresAt ? Math.max(0, principal.expiresAt.getTime() - Date.now()) : Infinity;
            const expiry =
              untilExpiry <= MAX_TIMER_MS ? setTimeout(() => ctx.extra.socket.close(CloseCode.Forbidden, 'Forbidden: token expired'), untilExpiry) : undefined;
            expiry?.unref();
            ctx.extra.socket.once('close', () => {
              sockets.delete(ctx.extra.socket);
              clearTimeout(expiry);
            });
          }
          return true;
        } catch (error) {
          if (isAppError(error) && error.code === ErrorCode.Unauthenticated) {
            ctx.extra.socket.close(CloseCode.Forbidden, `Forbidden: ${error.message}`.slice(0, 120));
            return false;
          }
          throw error;
        }
      },
      onSubscribe: async (ctx, _id, payload) => {
        const principal = ctx.extra.principal!;
        let document: DocumentNode;
        try {
          document = parse(payload.query, { maxTokens: 10_000 });
        } catch (error) {
          return [new GraphQLError((error as Error).message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })];
        }
        const validationErrors = validate(options.schema, document);
        if (validationErrors.length > 0) {
          return validationErrors.map((e) => new GraphQLError(e.message, { nodes: e.nodes ?? null, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }));
        }
        const operation = getOperationAST(document, payload.operationName);
        if (!operation) return [new GraphQLError('no operation to run (name it with operationName)', { extensions: { code: ErrorCode.BadUserInput } })];
        const variables = (payload.variables ?? undefined) as Record<string, unknown> | undefined;
        const refused = guardOperation(options.guard, document, operation, variables, principal, ctx.extra.request.socket.remoteAddress ?? null);
        if (refused) return [refused];
        metrics.subscriptionsActive.inc();
        return {
          schema: options.schema,
          document,
          operationName: payload.operationName ?? null,
          variableValues: variables ?? null,
          contextValue: await options.context(principal, ctx.extra.request),
        };
      },
      onComplete: () => {
        metrics.subscriptionsActive.dec();
      },
      onError: (_ctx, _id, _payload, errors) => formatGraphQLErrors(errors, logger),
      onNext: (_ctx, _id, _payload, _args, result) =>
        'errors' in result && result.errors ? { ...result, errors: formatGraphQLErrors(result.errors, logger) } : result,
    },
    wsServer,
  );
  return {
    wsServer,
    /** Closes every socket of a revoked token (4403 Forbidden). */
    closeToken(tokenId: string): void {
      for (const socket of socketsByToken.get(tokenId) ?? []) socket.close(CloseCode.Forbidden, 'Forbidden: token revoked');
      socketsByToken.delete(tokenId);
    },
    /** Closes every socket (1001 Going Away) and stops accepting new ones. */
    async dispose(): Promise<void> {
      await cleanup.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}
