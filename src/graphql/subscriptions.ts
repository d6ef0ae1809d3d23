import type { Server } from 'node:http';
import type { GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import type { GraphQLContext } from './context.js';
import { formatGraphQLErrors } from './errors.js';

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  httpServer: Server;
  path: string;
  logger: Logger;
  metrics: AppMetrics;
  context: () => Promise<GraphQLContext>;
}

/** graphql-ws on the same port and path as the HTTP endpoint. */
export function startSubscriptionServer(options: SubscriptionServerOptions) {
  const wsServer = new WebSocketServer({ server: options.httpServer, path: options.path });
  const { logger, metrics } = options;
  const cleanup = useServer<Record<string, unknown>, { context?: GraphQLContext }>(
    {
      schema: options.schema,
      context: async (ctx) => {
        ctx.extra.context ??= await options.context();
        return ctx.extra.context;
      },
      onSubscribe: () => {
        metrics.subscriptionsActive.inc();
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
    /** Closes every socket (1001 Going Away) and stops accepting new ones. */
    async dispose(): Promise<void> {
      await cleanup.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}
