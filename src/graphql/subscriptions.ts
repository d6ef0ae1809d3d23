import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  parse,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Principal } from '../auth/roles.js';
import type { AuditLog } from '../domain/AuditLog.js';
import type { EventLog } from '../domain/EventLog.js';
import { ErrorCode, isAppError } from '../errors.js';
import { hostRefusal, webSocketOriginRefusal, type OriginPolicy } from '../http/originPolicy.js';
import type { Logger } from '../log.js';
import { countOperation, type AppMetrics } from '../metrics.js';
import type { GraphQLContext } from './context.js';
import { clientErrorOf, errorCodeOf, formatGraphQLErrors } from './errors.js';
import { FEED_TARGET, SubscriptionFanOut, type FeedExecutionArgs } from './fanOut.js';
import { admitOperation, callerKey, guardOperation, replayCharge, type GuardOptions } from './guard.js';
import { documentBytes } from './documentStore.js';
import { ReplaySlots } from './replaySlots.js';
import { repeatedSelection, repeatedSelectionMessage } from './repeatedSelections.js';
import { auditMutation, auditUnresolvedMutation } from './operationAudit.js';

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  httpServer: HttpServer | HttpsServer;
  path: string;
  logger: Logger;
  metrics: AppMetrics;
  guard: GuardOptions;
  audit: AuditLog;
  originPolicy: OriginPolicy;
  maxConnectionsPerClient: number;
  maxSubscriptionsPerConnection: number;
  /** Authenticates `connection_init`'s payload (`authorization: "Bearer …"`); throws UNAUTHENTICATED. */
  authenticate: (authorization: string | undefined, request: IncomingMessage) => Promise<Principal>;
  context: (principal: Principal, request: IncomingMessage) => Promise<GraphQLContext>;
  /** Subscriptions over the event log are executed once per event and distinct (document, variables, role): fanOut.ts. */
  fanOut: { events: EventLog; maxBufferedBytes: number };
}

const MAX_TIMER_MS = 2 ** 31 - 1;
/** Close code for a client over a connection or subscription cap (4429, as graphql-ws uses 4xxx for its own refusals). */
export const CLOSE_TOO_MANY = 4429;
/** RFC 6455 1013 "Try Again Later": the server cannot serve the connection now (its database is unreachable). */
export const CLOSE_TRY_AGAIN_LATER = 1013;
/** The close reason of a socket ended by an internal error: the error's own message stays in the server's log. */
const INTERNAL_CLOSE_REASON = 'Internal server error';
/** WebSockets one address may hold open before they send connection_init (graphql-ws closes them after 3 s anyway). */
const MAX_UNAUTHENTICATED_PER_ADDRESS = 32;
/**
 * WebSockets the whole server holds open before they authenticate: a client owning many addresses (127.0.0.0/8 has
 * sixteen million, an IPv6 /64 more) held 1,192 sockets and their file descriptors under the per-address cap alone
 * (issue 34, finding 8). Far above what reconnecting screens need in the three seconds a socket may wait.
 */
export const MAX_UNAUTHENTICATED_SOCKETS = 256;
/**
 * Replay pages (up to 500 events each) held in memory at once by subscribers catching up from the store, over all
 * sockets: enough to keep the store busy, few enough that a thousand resuming subscribers cost megabytes, not gigabytes.
 */
const REPLAY_PAGES_AT_ONCE = 8;

/** What the server remembers of one running operation, for the audit entry and the metrics when it ends. */
interface RunningOperation {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  fields: string[];
  source: string;
  variables: Record<string, unknown> | undefined;
  /** What it keeps in memory while it runs (heldBytesOf), counted against its caller's and the server's budgets. */
  held: number;
}

/**
 * The heap an operation keeps for as long as it runs, estimated: graphql-ws keeps the whole subscribe message, and the
 * parsed document keeps its source and tokens (documentStore.ts). A viewer's 800 open subscriptions padded with 250 KB
 * comments ran the process out of memory (issue 34, attack 11, F1): 2.9 × the message was measured, this counts more.
 */
function heldBytesOf(document: DocumentNode, payload: unknown): number {
  return documentBytes(document) + 2 * (JSON.stringify(payload)?.length ?? 0);
}

/** What the open operations of one caller (token, or every local caller without authentication) may hold. */
export const MAX_HELD_BYTES_PER_CALLER = 32 * 1024 * 1024;
/** What every open operation of the server together may hold: a few callers at their limit, within the heap cap. */
export const MAX_HELD_BYTES = 128 * 1024 * 1024;

type Extra = {
  socket: WebSocket;
  request: IncomingMessage;
  principal?: Principal;
  operations?: Map<string, RunningOperation>;
};

/**
 * Operations of a connection its client has open besides `id`: graphql-ws reserves an id when its `subscribe` arrives
 * (before onSubscribe) and forgets it the moment `complete` arrives, whether or not the server has ended it yet.
 */
function otherOpenOperations(subscriptions: Readonly<Record<string, unknown>>, id: string): number {
  return Object.keys(subscriptions).length - (id in subscriptions ? 1 : 0);
}

function authorizationFrom(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.authorization ?? params?.Authorization ?? (params?.token ? `Bearer ${String(params.token)}` : undefined);
  return typeof value === 'string' ? value : undefined;
}

/**
 * Closes a socket whose connection_init failed, through the one error mapping (clientErrorOf): a bad token 4403 with
 * its message; an unreachable database (down, or refusing rollplane's login) 1013 Try Again Later; anything else 4500
 * with a generic reason. A close reason is shown to whoever connected, token or not: it never carries an internal
 * error's message (the driver's names the database, its role and its host); the detail goes to the log.
 */
function closeRefused(socket: WebSocket, error: unknown, logger: Logger): void {
  const refusal = clientErrorOf(error);
  if (refusal?.code === ErrorCode.Unauthenticated) {
    socket.close(CloseCode.Forbidden, `Forbidden: ${refusal.message}`.slice(0, 120));
  } else if (refusal?.code === ErrorCode.Unavailable) {
    // The token cannot be checked while the database cannot be used: retry later, not 4500 Internal Error.
    logger.warn({ err: error }, 'cannot authenticate a WebSocket: the database cannot be reached');
    socket.close(CLOSE_TRY_AGAIN_LATER, 'Try again later: the database cannot be reached');
  } else {
    logger.error({ err: error }, 'cannot authenticate a WebSocket');
    socket.close(CloseCode.InternalServerError, INTERNAL_CLOSE_REASON);
  }
}

/** An error thrown while preparing an operation, as that operation's error: its AppError, else INTERNAL (logged). */
function operationError(error: unknown, logger: Logger): GraphQLError {
  const clientError = clientErrorOf(error);
  if (clientError) return new GraphQLError(clientError.message, { extensions: { ...clientError.details, code: clientError.code } });
  logger.error({ err: error }, 'unexpected error while preparing a WebSocket operation');
  return new GraphQLError('internal error; see the server log', { extensions: { code: ErrorCode.Internal } });
}

function codeOf(errors: readonly GraphQLError[] | undefined): string {
  const first = errors?.[0];
  return first ? errorCodeOf(first) : 'ok';
}

/**
 * graphql-ws on the same port and path as the HTTP endpoint. The upgrade is refused for a foreign Origin (and, with
 * authentication off, a foreign Host); clients authenticate in `connection_init`; every operation passes the same
 * guard as HTTP operations (limits, rate limits, role) and every mutation the same audit path. A revoked token's
 * sockets are closed at once; connections per client and operations per connection are capped.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions) {
  const { logger, metrics } = options;
  const wsServer = new WebSocketServer({
    server: options.httpServer,
    path: options.path,
    // The same bound as an HTTP body: one message is one request.
    maxPayload: options.guard.limits.maxBodyBytes,
    // One message per turn of the event loop, as browsers dispatch them: with ws's default, every message of one
    // socket read ran in the same turn, so 16 sockets sending 99 `subscribe` messages at once held /healthz for
    // seconds (issue 34, attack 11, F5). Only clients' messages pay for it: subscribe, complete, ping.
    allowSynchronousEvents: false,
    verifyClient: (info, done) => {
      // Plain text, never the offending header echoed back, and nosniff like every other response.
      const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };
      if (hostRefusal(info.req, options.originPolicy)) {
        metrics.requestsRefused.inc({ reason: 'host', transport: 'ws' });
        return done(false, 421, 'this Host is not allowed while authentication is off (use localhost, a 127.0.0.0/8 address or [::1])', headers);
      }
      if (webSocketOriginRefusal(info.req, options.originPolicy)) {
        metrics.requestsRefused.inc({ reason: 'origin', transport: 'ws' });
        return done(false, 403, 'this Origin may not open a WebSocket here (same origin only, or list it in ROLLPLANE_CORS_ORIGINS)', headers);
      }
      done(true);
    },
  });
  // Sockets that have not (yet) authenticated count against their address, so that nobody can hold thousands of them
  // open for the init timeout each; once authenticated they count against their caller (onConnect).
  const unauthenticatedByAddress = new Map<string, number>();
  /** Sockets waiting to authenticate, oldest first. */
  const waiting = new Set<WebSocket>();
  const pendingRelease = new WeakMap<WebSocket, () => void>();
  wsServer.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const address = request.socket.remoteAddress ?? 'unknown';
    const pending = unauthenticatedByAddress.get(address) ?? 0;
    if (pending >= MAX_UNAUTHENTICATED_PER_ADDRESS) {
      metrics.requestsRefused.inc({ reason: 'connections', transport: 'ws' });
      socket.close(CLOSE_TOO_MANY, `Too many connections waiting to authenticate from this address (at most ${MAX_UNAUTHENTICATED_PER_ADDRESS})`);
      return;
    }
    if (waiting.size >= MAX_UNAUTHENTICATED_SOCKETS) {
      // Full: the socket that has waited longest goes, not the new one. Refusing new ones let sockets that never
      // authenticate, reopened from many addresses, keep every client out (attack 11, F6); a client that sends
      // connection_init at once is now out of reach unless 256 sockets are opened while it does.
      const oldest = waiting.values().next().value!;
      metrics.requestsRefused.inc({ reason: 'connections', transport: 'ws' });
      pendingRelease.get(oldest)?.();
      oldest.close(CLOSE_TOO_MANY, `Too many connections waiting to authenticate (at most ${MAX_UNAUTHENTICATED_SOCKETS}); this one waited longest`);
    }
    // A socket may hold one operation per allowed subscription, each with its own close listener (fanOut.ts).
    socket.setMaxListeners(options.maxSubscriptionsPerConnection + 10);
    unauthenticatedByAddress.set(address, pending + 1);
    waiting.add(socket);
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      waiting.delete(socket);
      const left = (unauthenticatedByAddress.get(address) ?? 1) - 1;
      if (left <= 0) unauthenticatedByAddress.delete(address);
      else unauthenticatedByAddress.set(address, left);
    };
    pendingRelease.set(socket, release);
    socket.once('close', release);
  });
  const socketsByToken = new Map<string, Set<WebSocket>>();
  /** Bytes held by open operations, per caller and in all (RunningOperation.held). */
  const heldByCaller = new Map<string, number>();
  let heldInAll = 0;
  const hold = (caller: string, bytes: number) => {
    const now = (heldByCaller.get(caller) ?? 0) + bytes;
    if (now <= 0) heldByCaller.delete(caller);
    else heldByCaller.set(caller, now);
    heldInAll += bytes;
  };
  const socketsByCaller = new Map<string, Set<WebSocket>>();
  const fanOut = new SubscriptionFanOut({
    events: options.fanOut.events,
    metrics,
    logger,
    maxBufferedBytes: options.fanOut.maxBufferedBytes,
    replaySlots: new ReplaySlots(REPLAY_PAGES_AT_ONCE),
  });

  const cleanup = useServer<Record<string, unknown>, Extra>(
    {
      // Whatever still escapes a callback closes its socket 4500 with a generic reason, never the error's message
      // (graphql-ws sends the message unless in "production", which it otherwise reads from NODE_ENV).
      isProd: true,
      schema: options.schema,
      subscribe: (args: FeedExecutionArgs) => fanOut.subscribe(args),
      onConnect: async (ctx) => {
        let principal: Principal;
        try {
          principal = await options.authenticate(authorizationFrom(ctx.connectionParams), ctx.extra.request);
        } catch (error) {
          if (isAppError(error) && error.code === ErrorCode.Unauthenticated) metrics.requestsRefused.inc({ reason: 'unauthenticated', transport: 'ws' });
          closeRefused(ctx.extra.socket, error, logger);
          return false;
        }
        const socket = ctx.extra.socket;
        const key = callerKey(principal);
        const callerSockets = socketsByCaller.get(key) ?? new Set<WebSocket>();
        if (callerSockets.size >= options.maxConnectionsPerClient) {
          metrics.requestsRefused.inc({ reason: 'connections', transport: 'ws' });
          socket.close(CLOSE_TOO_MANY, `Too many connections: at most ${options.maxConnectionsPerClient} per client`);
          return false;
        }
        callerSockets.add(socket);
        socketsByCaller.set(key, callerSockets);
        ctx.extra.principal = principal;
        ctx.extra.operations = new Map();
        pendingRelease.get(socket)?.();
        let expiry: NodeJS.Timeout | undefined;
        if (principal.kind === 'token') {
          const sockets = socketsByToken.get(principal.tokenId) ?? new Set();
          sockets.add(socket);
          socketsByToken.set(principal.tokenId, sockets);
          // A token that expires while its socket is open is as invalid as a revoked one: close it at expiry.
          // (Timers cannot wait longer than about 24 days; a token expiring later is checked when it reconnects.)
          const untilExpiry = principal.expiresAt ? Math.max(0, principal.expiresAt.getTime() - Date.now()) : Infinity;
          expiry = untilExpiry <= MAX_TIMER_MS ? setTimeout(() => socket.close(CloseCode.Forbidden, 'Forbidden: token expired'), untilExpiry) : undefined;
          expiry?.unref();
        }
        const operations = ctx.extra.operations;
        socket.once('close', () => {
          clearTimeout(expiry);
          // Whatever graphql-ws still ends after the close holds nothing from now on (onComplete subtracts 0).
          for (const op of operations.values()) {
            hold(key, -op.held);
            op.held = 0;
          }
          if (principal.kind === 'token') socketsByToken.get(principal.tokenId)?.delete(socket);
          callerSockets.delete(socket);
          if (callerSockets.size === 0 && socketsByCaller.get(key) === callerSockets) socketsByCaller.delete(key);
        });
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const principal = ctx.extra.principal!;
        const running = ctx.extra.operations!;
        // graphql-ws lets a client reuse an id once it sent `complete`, but an operation still settling under that id
        // would then take the new one's place (both delivering, the first never ended). Refuse the reuse until the
        // previous operation has ended (onComplete); clients that follow the protocol's advice use fresh ids.
        if (running.has(id)) {
          return [
            new GraphQLError(`operation id "${id}" is still ending; wait for it to end or use another id`, { extensions: { code: ErrorCode.BadUserInput } }),
          ];
        }
        // The cap counts the operations the client has open, those still being checked included: one it completed stops
        // counting at once, although the server may still be ending it (its memory stays counted in the held-bytes
        // budget until then). Counted by `running`, a client that completed 99 operations and opened 99 more was
        // closed (attack 11, F7), and a burst could pass the cap while a shared rate limit was being asked.
        if (otherOpenOperations(ctx.subscriptions, id) >= options.maxSubscriptionsPerConnection) {
          metrics.requestsRefused.inc({ reason: 'subscriptions', transport: 'ws' });
          ctx.extra.socket.close(CLOSE_TOO_MANY, `Too many operations: at most ${options.maxSubscriptionsPerConnection} per connection`);
          return [new GraphQLError('too many operations on this connection', { extensions: { code: ErrorCode.RateLimited } })];
        }
        // The least an operation costs, before it is parsed or validated (admitOperation).
        const refusal = await admitOperation(options.guard, principal);
        if (refusal) {
          metrics.requestsRefused.inc({ reason: 'rate_limited', transport: 'ws' });
          return [refusal];
        }
        let document: DocumentNode;
        try {
          document = parse(payload.query, { maxTokens: options.guard.limits.maxQueryTokens });
        } catch (error) {
          return [new GraphQLError((error as Error).message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })];
        }
        const repeated = repeatedSelection(document);
        if (repeated) return [new GraphQLError(repeatedSelectionMessage(repeated), { extensions: { code: ErrorCode.BadUserInput } })];
        const variables = (payload.variables ?? undefined) as Record<string, unknown> | undefined;
        const caller = callerKey(principal);
        const held = heldBytesOf(document, payload);
        if ((heldByCaller.get(caller) ?? 0) + held > MAX_HELD_BYTES_PER_CALLER || heldInAll + held > MAX_HELD_BYTES) {
          metrics.requestsRefused.inc({ reason: 'held_bytes', transport: 'ws' });
          const mib = (bytes: number) => `${Math.ceil(bytes / (1024 * 1024))} MiB`;
          const whose =
            (heldByCaller.get(caller) ?? 0) + held > MAX_HELD_BYTES_PER_CALLER
              ? `this token's, at most ${mib(MAX_HELD_BYTES_PER_CALLER)}`
              : `the server's, at most ${mib(MAX_HELD_BYTES)}`;
          return [
            new GraphQLError(`open operations would hold more memory than allowed (${whose}); end some, or send smaller documents and variables`, {
              extensions: { code: ErrorCode.RateLimited },
            }),
          ];
        }
        const sourceAddress = ctx.extra.request.socket.remoteAddress ?? null;
        const refuseUnresolved = async (errors: GraphQLError[]) => {
          const attempt = { document, operationName: payload.operationName, principal, sourceAddress, source: payload.query, variables, errors };
          await auditUnresolvedMutation(options.audit, options.schema, options.guard.mutationLimiter, attempt, logger);
          return errors;
        };
        const validationErrors = validate(options.schema, document);
        if (validationErrors.length > 0) {
          return refuseUnresolved(
            validationErrors.map((e) => new GraphQLError(e.message, { nodes: e.nodes ?? null, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })),
          );
        }
        const operation = getOperationAST(document, payload.operationName);
        if (!operation)
          return refuseUnresolved([new GraphQLError('no operation to run (name it with operationName)', { extensions: { code: ErrorCode.BadUserInput } })]);
        // Variables are coerced here, as Apollo does over HTTP, so that a bad value is the caller's error
        // (BAD_USER_INPUT), not one that surfaces mid-execution without a code.
        const coerced = getVariableValues(options.schema, operation.variableDefinitions ?? [], variables ?? {}, { maxErrors: 50 });
        if (coerced.errors) {
          return refuseUnresolved(
            coerced.errors.map((e) => new GraphQLError(e.message, { nodes: e.nodes ?? null, extensions: { code: ErrorCode.BadUserInput } })),
          );
        }
        const pending = guardOperation(options.guard, document, operation, variables, principal);
        let verdict: Awaited<typeof pending>;
        try {
          verdict = pending instanceof Promise ? await pending : pending;
        } catch (error) {
          // A limit that could not be checked (PostgreSQL's shared rate limit while the database is down): this
          // operation's error (UNAVAILABLE; INTERNAL, logged, for anything else); thrown on, graphql-ws would close the
          // whole socket with 4500.
          return [operationError(error, logger)];
        }
        if (verdict.error) {
          countOperation(metrics, operation.operation, verdict.fields, codeOf([verdict.error]), 'ws');
          await auditMutation(
            options.audit,
            options.schema,
            { principal, sourceAddress, document, operation, fields: verdict.fields, source: payload.query, variables, errors: [verdict.error] },
            logger,
          );
          return [verdict.error];
        }
        running.set(id, { document, operation, fields: verdict.fields, source: payload.query, variables, held });
        hold(caller, held);
        if (operation.operation === 'subscription') metrics.subscriptionsActive.inc();
        const chargeReplay = replayCharge(options.guard, principal, verdict.cost);
        const args: FeedExecutionArgs = {
          schema: options.schema,
          document,
          operationName: payload.operationName ?? null,
          variableValues: variables ?? null,
          contextValue: { ...(await options.context(principal, ctx.extra.request)), chargeReplay },
        };
        // Where the shared fan-out writes this subscription's messages; the role is part of its group key.
        if (operation.operation === 'subscription') {
          args[FEED_TARGET] = {
            socket: ctx.extra.socket,
            id,
            role: principal.role,
            source: payload.query,
            wanted: () => id in ctx.subscriptions,
            chargeReplay,
          };
        }
        return args;
      },
      onOperation: async (ctx, id, _payload, _args, result) => {
        const op = ctx.extra.operations?.get(id);
        // Queries and mutations have their one result here; subscriptions are counted when they end.
        if (!op || op.operation.operation === 'subscription') return;
        const settled = await result;
        if (Symbol.asyncIterator in settled) return;
        countOperation(metrics, op.operation.operation, op.fields, codeOf(settled.errors), 'ws');
        const principal = ctx.extra.principal!;
        await auditMutation(
          options.audit,
          options.schema,
          {
            principal,
            sourceAddress: ctx.extra.request.socket.remoteAddress ?? null,
            document: op.document,
            operation: op.operation,
            fields: op.fields,
            source: op.source,
            variables: op.variables,
            errors: settled.errors ?? [],
          },
          logger,
        );
      },
      onComplete: (ctx, id) => {
        const op = ctx.extra.operations?.get(id);
        if (!op) return;
        ctx.extra.operations!.delete(id);
        hold(callerKey(ctx.extra.principal!), -op.held);
        if (op.operation.operation === 'subscription') {
          metrics.subscriptionsActive.dec();
          countOperation(metrics, 'subscription', op.fields, 'ok', 'ws');
        }
      },
      onError: (_ctx, _id, _payload, errors) => formatGraphQLErrors(errors, logger),
      // The fan-out writes its own messages; this formats errors in what graphql-ws executes itself (queries and
      // mutations sent over the socket, and a subscription field the event log does not serve).
      onNext: (_ctx, _id, _payload, _args, result) => {
        return 'errors' in result && result.errors ? { ...result, errors: formatGraphQLErrors(result.errors, logger) } : result;
      },
    },
    wsServer,
  );
  return {
    wsServer,
    /** Distinct executions the fan-out serves now. */
    fanOutGroups: () => fanOut.groupCount(),
    /** Tokens that have sockets open here (checked again when revocations may have been missed). */
    openTokens(): string[] {
      return [...socketsByToken.keys()];
    },
    /** Closes every socket of a revoked token (4403 Forbidden). */
    closeToken(tokenId: string): void {
      for (const socket of socketsByToken.get(tokenId) ?? []) socket.close(CloseCode.Forbidden, 'Forbidden: token revoked');
      socketsByToken.delete(tokenId);
    },
    /** Closes every socket (1001 Going Away) and stops accepting new ones. */
    async dispose(): Promise<void> {
      await cleanup.dispose();
      fanOut.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}
