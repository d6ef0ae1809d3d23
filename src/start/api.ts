import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { CallerRateLimiter } from '../auth/CallerRateLimiter.js';
import { followRevocations } from '../auth/revocations.js';
import { ANONYMOUS, type Principal } from '../auth/roles.js';
import type { Config } from '../config.js';
import { informerCacheChanges } from '../controller/Informer.js';
import type { Domain } from '../domain/Domain.js';
import { createApolloHandler } from '../graphql/apollo.js';
import type { GraphQLContext } from '../graphql/context.js';
import { BoundedDocumentStore, DOCUMENT_STORE_BYTES } from '../graphql/documentStore.js';
import { admitOperation } from '../graphql/guard.js';
import { guardPlugin } from '../graphql/guardPlugin.js';
import { listSizesOf } from '../graphql/listSizes.js';
import { cachedRootFieldsOf, ResponseCache } from '../graphql/responseCache.js';
import { buildSchema } from '../graphql/schema.js';
import { ROLLOUT_KIND_MODULES } from '../kinds/index.js';
import { startSubscriptionServer } from '../graphql/subscriptions.js';
import type { ReadinessCheck } from '../http/health.js';
import type { OriginPolicy } from '../http/originPolicy.js';
import { attachRoutes } from '../http/router.js';
import type { Logger } from '../log.js';
import { countActiveRollouts, type AppMetrics } from '../metrics.js';
import { diskSpaceOf } from '../store/diskSpace.js';
import { withInformerChanges } from '../store/writeGeneration.js';
import { createUiHandler } from '../ui/serveUi.js';
import { compose, type Started } from './compose.js';
import type { History } from './history.js';

const GRAPHQL_PATH = '/graphql';

export interface ApiDeps {
  logger: Logger;
  metrics: AppMetrics;
  history: History;
  domain: Domain;
  readiness: ReadinessCheck[];
  /** Refreshes the gauges other parts own before /metrics is read. */
  scrape(): Promise<void>;
}

/**
 * GraphQL over HTTP (Apollo) and WebSocket (graphql-ws) with the guard, the web UI, health and /metrics, listening on
 * HOST:PORT. Stopping marks /readyz as shutting down, closes the subscriptions (clients get 1001 Going Away), then
 * Apollo drains in-flight requests and closes the listener.
 */
export async function startApi(config: Config, { logger, metrics, history, domain, readiness, scrape }: ApiDeps) {
  return compose(logger, async (started) => {
    const { db, audit, tokens } = history;
    const schema = buildSchema(ROLLOUT_KIND_MODULES);
    const httpServer = httpServerFor(config);
    const authenticate = (authorization: string | undefined): Promise<Principal> =>
      config.auth.enabled ? tokens.authenticate(authorization) : Promise.resolve(ANONYMOUS);
    const contextFor = async (principal: Principal, req: IncomingMessage): Promise<GraphQLContext> => ({
      domain,
      logger,
      principal,
      sourceAddress: req.socket.remoteAddress ?? null,
      analysis: db.analysis,
      ...(history.gateTypes.templates ? { analysisTemplates: history.gateTypes.templates } : {}),
    });
    const { mutationsPerMinute, mutationBurst, queryCostPerMinute, queryCostBurst } = config.rateLimits;
    const guard = {
      schema,
      limits: config.limits,
      // The whole deployment's limit: shared by every replica on PostgreSQL, in process on SQLite (one process).
      mutationLimiter: db.sharedRateLimiter?.(mutationsPerMinute, mutationBurst) ?? new CallerRateLimiter(mutationsPerMinute, mutationBurst),
      // Query cost stays per replica: every query pays it, and a round trip per query would cost more than it protects.
      queryCostLimiter: new CallerRateLimiter(queryCostPerMinute, queryCostBurst),
      listSizes: listSizesOf(domain, ROLLOUT_KIND_MODULES),
    };
    const originPolicy: OriginPolicy = { corsOrigins: config.corsOrigins, authEnabled: config.auth.enabled, bindHost: config.host };
    const responseCache = await startResponseCache(config, history, logger, started);
    const documentStore = new BoundedDocumentStore(DOCUMENT_STORE_BYTES);
    let listening = false;
    const { apollo, handle } = await createApolloHandler({
      schema,
      documentStore,
      httpServer,
      logger,
      metrics,
      maxBodyBytes: config.limits.maxBodyBytes,
      maxQueryTokens: config.limits.maxQueryTokens,
      ...(responseCache ? { responseCache } : {}),
      authenticate: (req) => authenticate(req.headers.authorization),
      context: (req, principal) => contextFor(principal, req),
      admit: (principal) => admitOperation(guard, principal),
      plugins: [guardPlugin({ ...guard, audit, logger })],
    });
    // Before the listener is up there is nothing to drain; Apollo's drain then fails on a server that is not running.
    started(() => apollo.stop().catch((error: unknown) => (listening ? Promise.reject(error) : undefined)));
    const subscriptions = startSubscriptionServer({
      schema,
      httpServer,
      path: GRAPHQL_PATH,
      logger,
      metrics,
      guard,
      audit,
      originPolicy,
      maxConnectionsPerClient: config.subscriptions.maxConnectionsPerClient,
      maxSubscriptionsPerConnection: config.subscriptions.maxSubscriptionsPerConnection,
      fanOut: { events: domain.events, maxBufferedBytes: config.subscriptions.wsMaxBufferedBytes },
      authenticate: (authorization) => authenticate(authorization),
      context: contextFor,
    });
    started(() => subscriptions.dispose());
    started(await followRevocations(tokens, db.tokens, subscriptions, logger));

    let shuttingDown = false;
    attachRoutes(httpServer, {
      graphqlPath: GRAPHQL_PATH,
      graphql: handle,
      ui: createUiHandler({ graphqlPath: GRAPHQL_PATH }),
      readiness,
      isShuttingDown: () => shuttingDown,
      metrics,
      beforeScrape: async () => {
        if (responseCache) metrics.responseCacheBytes.set(responseCache.size().bytes);
        metrics.documentStoreBytes.set(documentStore.size().bytes);
        if (history.sqliteFile) metrics.databaseDiskFreeBytes.set((await diskSpaceOf(history.sqliteFile)).freeBytes);
        if (db.isOpen()) await Promise.all([countActiveRollouts(metrics, db.store.read), history.waveMetrics.scrape(history.rollouts), scrape()]);
      },
      originPolicy,
      logger,
    });
    await listen(httpServer, config.port, config.host);
    listening = true;
    started(async () => {
      shuttingDown = true;
    });
    const port = (httpServer.address() as AddressInfo).port;
    const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
    return { port, url: `${config.tls.certFile ? 'https' : 'http'}://${hostForUrl}:${port}${GRAPHQL_PATH}` };
  });
}

function httpServerFor(config: Config): Server {
  const { certFile, keyFile } = config.tls;
  const server = certFile && keyFile ? createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }) : createServer();
  // A client trickling its request (headers or body) holds a socket: bound how long it may take. The defaults are
  // 60 s for headers and 300 s for the whole request.
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;
  return server;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Answers to history and cluster-view queries, kept until what they were read from changes (ADR 0026); none at 0 MiB. */
async function startResponseCache(config: Config, { db, bus }: History, logger: Logger, started: Started) {
  if (config.graphql.responseCacheBytes === 0) return undefined;
  const writes = started(await db.watchWrites((error) => logger.warn({ err: error }, 'the history write announcement connection failed; reconnecting')));
  // Subscribed before any subscriber of the feed (the bus calls its listeners in order, synchronously).
  const stopBumping = bus.subscribe(() => writes.bump());
  started(async () => stopBumping());
  return new ResponseCache(
    { history: writes, cluster: withInformerChanges(writes, informerCacheChanges) },
    config.graphql.responseCacheBytes,
    cachedRootFieldsOf(ROLLOUT_KIND_MODULES),
  );
}
