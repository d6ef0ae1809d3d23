import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import type { Domain } from './domain/Domain.js';
import { reactToRolloutEvents } from './domain/engineReactions.js';
import { InProcessEventBus, type EventBus } from './domain/EventBus.js';
import { EventLog } from './domain/EventLog.js';
import { InFlightChanges } from './domain/InFlightChanges.js';
import { RolloutEngine } from './domain/RolloutEngine.js';
import { RolloutLauncher } from './domain/RolloutLauncher.js';
import { RolloutService } from './domain/RolloutService.js';
import { ResponseCache } from './graphql/responseCache.js';
import { listSizesOf } from './graphql/listSizes.js';
import { checkDiskSpace, diskSpaceOf } from './store/diskSpace.js';
import { parseDatabaseUrl } from './util/databaseUrl.js';
import { BoundedDocumentStore, DOCUMENT_STORE_BYTES } from './graphql/documentStore.js';
import type { WriteGeneration } from './store/writeGeneration.js';
import { createApolloHandler } from './graphql/apollo.js';
import type { GraphQLContext } from './graphql/context.js';
import { buildSchema } from './graphql/schema.js';
import { startSubscriptionServer } from './graphql/subscriptions.js';
import type { ReadinessCheck } from './http/health.js';
import { attachRoutes } from './http/router.js';
import { createUiHandler } from './ui/serveUi.js';
import { Manager } from './controller/Manager.js';
import { informerCacheChanges } from './controller/Informer.js';
import { setupRolloutKinds } from './controllers/index.js';
import { AgentPoolChoices, agentPoolsWithHistory } from './domain/agentPoolChoices.js';
import { RolloutControllerHost } from './controllers/RolloutControllerHost.js';
import { createKubeClients } from './kube/index.js';
import { connectKubernetes, requireReachable, type KubeConnection } from './kubeConnection.js';
import { createLogger, type Logger } from './log.js';
import { countActiveRollouts, countHistoryEvents, createMetrics, type AppMetrics } from './metrics.js';
import { openDatabase, type Database } from './store/db.js';
import { VERSION } from './version.js';
import { CallerRateLimiter } from './auth/CallerRateLimiter.js';
import { ANONYMOUS, type Principal } from './auth/roles.js';
import { TokenService } from './auth/TokenService.js';
import { TOKEN_CACHE_TTL_MS } from './auth/TokenCache.js';
import { AuditLog } from './domain/AuditLog.js';
import { guardPlugin } from './graphql/guardPlugin.js';
import { bootstrapAdminToken } from './auth/bootstrap.js';
import type { OriginPolicy } from './http/originPolicy.js';
import { startNotifications } from './notify/startNotifications.js';

const GRAPHQL_PATH = '/graphql';
const AUDIT_PRUNE_INTERVAL_MS = 3600_000;
/** How long a cluster given by kubeconfig or in-cluster may take to answer at start before the service gives up. */
const KUBE_REACHABLE_TIMEOUT_MS = 15_000;

export interface App {
  /** `http://host:port/graphql` with the real port. */
  url: string;
  port: number;
  config: Config;
  logger: Logger;
  metrics: AppMetrics;
  db: Database;
  bus: EventBus;
  domain: Domain;
  kube: KubeConnection;
  /** The controller manager: informers, controllers and their queues (tests wait on it being quiet). */
  manager: Manager;
  /** Graceful shutdown; idempotent. */
  stop(): Promise<void>;
}

/**
 * The composition root: the only place that wires store, domain, Kubernetes, GraphQL and HTTP together. Starting
 * order is store → Kubernetes → domain → API; stopping is the reverse.
 */
export async function startApp(config: Config, options: { logger?: Logger } = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel, config.logFormat);
  const metrics = createMetrics();
  const db = await openDatabase(config.databaseUrl);
  if (db.migrations.applied.length > 0) logger.info({ applied: db.migrations.applied, database: db.location }, 'database migrated');

  const cleanups: (() => Promise<void>)[] = [() => db.close()];
  const cleanupAll = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error) => logger.error({ err: error }, 'error during shutdown'));
  };

  let kube: KubeConnection;
  try {
    kube = await connectKubernetes(config, logger);
    if (kube.mode !== 'sim') await requireReachable(kube, KUBE_REACHABLE_TIMEOUT_MS);
    logger.info({ kubernetes: kube.describe() }, 'Kubernetes API reachable');
  } catch (error) {
    await cleanupAll();
    throw error;
  }
  cleanups.push(() => kube.stop());

  const bus = new InProcessEventBus();
  countHistoryEvents(metrics, bus);
  // PostgreSQL: commits of concurrent transactions (and of other replicas) finish out of id order; publish from the store.
  const events = new EventLog(db.store, bus, { publishFromStore: db.provider === 'postgresql' });
  const rollouts = new RolloutService(db.store, events);
  // Events committed by other replicas reach this one's subscribers through the store (PostgreSQL only).
  // Set once the controllers exist (below): what to do when PostgreSQL is reachable again after an outage.
  let onDatabaseBack = () => {};
  const watcher = await db.watchEvents(
    (upTo) => void events.catchUp(upTo),
    (error) => logger.warn({ err: error }, 'the event notification connection failed; reconnecting'),
    () => onDatabaseBack(),
  );
  cleanups.push(() => watcher.stop());
  // PostgreSQL: a token read is a round trip, kept for a second (auth/TokenCache.ts); SQLite reads it every time.
  const tokens = new TokenService(db.tokens, Date.now, db.provider === 'postgresql' ? TOKEN_CACHE_TTL_MS : 0);
  const audit = new AuditLog(db.audit);
  await bootstrapAdminToken(config, tokens, logger);
  const pruneAudit = () =>
    audit.prune({ days: config.auth.auditRetentionDays, maxEntries: config.auth.auditMaxEntries }).then(
      (pruned) => pruned > 0 && logger.info({ pruned }, 'pruned audit entries past their retention'),
      (error: unknown) => logger.warn({ err: error }, 'cannot prune the audit log'),
    );
  await pruneAudit();
  const auditPruner = setInterval(() => void pruneAudit(), AUDIT_PRUNE_INTERVAL_MS);
  auditPruner.unref();
  cleanups.push(async () => clearInterval(auditPruner));
  const engine = new RolloutEngine(rollouts, logger.child({ component: 'engine' }));
  const launcher = new RolloutLauncher(rollouts);

  const clients = createKubeClients({
    mode: kube.mode,
    ...((kube.kubeconfigPath ?? config.kube.kubeconfigPath) ? { kubeconfigPath: kube.kubeconfigPath ?? config.kube.kubeconfigPath } : {}),
    qps: config.kube.qps,
    burst: config.kube.burst,
    registry: metrics.registry,
  });
  const manager = new Manager({
    clients,
    registry: metrics.registry,
    logger,
    leaderElection: config.leaderElection,
    runControllers: config.controllers,
    // PostgreSQL: a replica whose database cannot be written cannot record anything its controllers do, so it neither
    // takes the lease nor keeps it, and a replica that can takes over (attack 10: a leader cut off from PostgreSQL
    // alone kept it, and every rollout waited for the partition to end). SQLite has one replica: no one to hand over to.
    ...(db.provider === 'postgresql' && {
      canLead: () =>
        db.store.checkWritable().then(
          () => true,
          () => false,
        ),
    }),
  });
  const host = new RolloutControllerHost({ config, clients, manager, logger, events, inFlight: new InFlightChanges(db.store, events) });
  const kinds = setupRolloutKinds(host);
  for (const driver of kinds.drivers) engine.registerDriver(driver);

  // The engine runs on the controller runtime: one key per rollout id, re-evaluated on every change.
  const rolloutController = manager.controller({
    name: 'rollouts',
    workers: config.rollouts.workers,
    reconciler: { reconcile: (request, signal) => engine.reconcile(request.name, signal) },
  });
  rolloutController.watch({
    resync: (enqueue) => {
      engine.pendingWork().then(
        (ids) => ids.forEach(enqueue),
        (error: unknown) => logger.error({ err: error }, 'cannot list rollouts to resume'),
      );
    },
  });
  engine.connect((id, afterMs) => (afterMs ? rolloutController.enqueueAfter(id, afterMs) : rolloutController.enqueue(id)), launcher);
  host.onTargetChanged((kind, namespace, name) => engine.targetChanged(kind, namespace, name));
  // Views of rollouts cached while not leading may be stale: another leader may have moved them on.
  manager.onStartedLeading(() => engine.forgetViews());
  // During a database outage every reconcile failed and backed off (up to a minute): resume at once when it is back.
  onDatabaseBack = () => {
    logger.info('the database is reachable again: resyncing the controllers');
    manager.resync();
  };
  reactToRolloutEvents(bus, engine);
  // Notifications: the admin service here; the outbox is sent by the leader only (a controller of the manager).
  const notifications = startNotifications({ config, store: db.notifications, manager, bus, metrics, logger });
  cleanups.push(() => notifications.stop());

  const domain: Domain = {
    facts: { version: VERSION, kubeMode: config.kube.mode, startedAt: new Date() },
    events,
    rollouts,
    launcher,
    engine,
    ...kinds.queries,
    // What each pool should run comes from the history (what rollouts decided), not from the controller's --image.
    ...(kinds.queries.agentPools ? { agentPools: agentPoolsWithHistory(kinds.queries.agentPools, new AgentPoolChoices(rollouts, events)) } : {}),
    workQueues: () => host.queueSnapshots(),
    tokens,
    audit,
    notifications: notifications.service,
  };

  const readiness: ReadinessCheck[] = [
    {
      name: 'database',
      async check() {
        if (!db.isOpen()) throw new Error('database closed');
        // A write, not a read: a full disk or a read-only volume leaves reads working and every mutation failing.
        await db.store.checkWritable().catch((error: unknown) => {
          // /readyz answers anyone with the message (no host or port); the detail is logged here.
          logger.warn({ err: (error as Error).cause ?? error }, `readiness: ${(error as Error).message}`);
          throw error;
        });
      },
    },
    {
      name: 'kubernetes',
      check: () =>
        kube.check().catch((error: unknown) => {
          // As for the database: the answer names no address; the log has the detail.
          logger.warn({ err: (error as Error).cause ?? error, server: kube.kubeConfig.getCurrentCluster()?.server }, `readiness: ${(error as Error).message}`);
          throw error;
        }),
    },
    { name: 'controllers', check: async () => manager.checkReady() },
  ];
  const target = parseDatabaseUrl(config.databaseUrl);
  const sqliteFile = target.provider === 'sqlite' ? target.file : undefined;
  if (sqliteFile) {
    readiness.push({ name: 'disk', advisory: true, check: async () => checkDiskSpace(await diskSpaceOf(sqliteFile), sqliteFile) });
  }

  const schema = buildSchema();
  const httpServer = config.tls ? createHttpsServer({ cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) }) : createServer();
  // A client trickling its request (headers or body) holds a socket: bound how long it may take. The defaults are
  // 60 s for headers and 300 s for the whole request.
  httpServer.headersTimeout = 15_000;
  httpServer.requestTimeout = 30_000;
  const sourceAddressOf = (req: IncomingMessage) => req.socket.remoteAddress ?? null;
  const authenticate = (authorization: string | undefined): Promise<Principal> =>
    config.auth.enabled ? tokens.authenticate(authorization) : Promise.resolve(ANONYMOUS);
  const contextFor = async (principal: Principal, req: IncomingMessage): Promise<GraphQLContext> => ({
    domain,
    logger,
    principal,
    sourceAddress: sourceAddressOf(req),
  });
  const guard = {
    schema,
    limits: config.limits,
    // The whole deployment's limit: shared by every replica on PostgreSQL, in process on SQLite (one process).
    mutationLimiter:
      db.sharedRateLimiter?.(config.auth.mutationsPerMinute, config.auth.mutationBurst) ??
      new CallerRateLimiter(config.auth.mutationsPerMinute, config.auth.mutationBurst),
    // Query cost stays per replica: every query pays it, and a round trip per query would cost more than it protects.
    queryCostLimiter: new CallerRateLimiter(config.auth.queryCostPerMinute, config.auth.queryCostBurst),
    listSizes: listSizesOf(domain),
  };
  const originPolicy: OriginPolicy = { corsOrigins: config.corsOrigins, authEnabled: config.auth.enabled, bindHost: config.host };
  const subscriptions = startSubscriptionServer({
    schema,
    httpServer,
    path: GRAPHQL_PATH,
    logger,
    metrics,
    guard,
    audit,
    originPolicy,
    maxConnectionsPerClient: config.auth.maxConnectionsPerClient,
    maxSubscriptionsPerConnection: config.auth.maxSubscriptionsPerConnection,
    fanOut: { mode: config.auth.subscriptionFanOut, events: domain.events, maxBufferedBytes: config.auth.wsMaxBufferedBytes },
    authenticate: (authorization) => authenticate(authorization),
    context: contextFor,
  });
  tokens.onRevoked((tokenId) => subscriptions.closeToken(tokenId));
  // Revocations made on other replicas (PostgreSQL); a wake-up without a token id means some may have been missed.
  const revocations = await db.tokens.watchRevocations(
    (tokenId) =>
      tokenId
        ? tokens.revokedElsewhere(tokenId)
        : void tokens
            .recheck(subscriptions.openTokens())
            .catch((error: unknown) => logger.warn({ err: error }, 'cannot recheck the tokens of open subscriptions')),
    (error) => logger.warn({ err: error }, 'the token revocation connection failed; reconnecting'),
    // No cached token is trusted while revocations cannot reach this replica (auth/TokenCache.ts).
    { lost: () => tokens.announcementsLost(), back: () => tokens.announcementsBack() },
  );
  cleanups.push(() => revocations.stop());
  // Answers to history and cluster-view queries, kept until what they were read from changes (ADR 0026).
  let responseCache: ResponseCache | undefined;
  if (config.auth.responseCacheBytes > 0) {
    const writes = await db.watchWrites((error) => logger.warn({ err: error }, 'the history write announcement connection failed; reconnecting'));
    // Subscribed before any subscriber of the feed (the bus calls its listeners in order, synchronously).
    const stopBumping = bus.subscribe(() => writes.bump());
    cleanups.push(async () => {
      stopBumping();
      await writes.stop();
    });
    const clusterViews: WriteGeneration = {
      current: () => {
        const history = writes.current();
        return history === null ? null : `${history}/${informerCacheChanges()}`;
      },
      bump: () => writes.bump(),
      stop: async () => {},
    };
    responseCache = new ResponseCache({ history: writes, cluster: clusterViews }, config.auth.responseCacheBytes);
  }
  const documentStore = new BoundedDocumentStore(DOCUMENT_STORE_BYTES);
  const { apollo, handle } = await createApolloHandler({
    schema,
    documentStore,
    httpServer,
    logger,
    metrics,
    maxBodyBytes: config.limits.maxBodyBytes,
    maxQueryTokens: config.limits.maxQueryTokens,
    graphqlCompileAfter: config.auth.graphqlCompileAfter,
    ...(responseCache ? { responseCache } : {}),
    authenticate: (req) => authenticate(req.headers.authorization),
    context: (req, principal) => contextFor(principal, req),
    plugins: [guardPlugin({ ...guard, audit, logger })],
  });

  const ui = createUiHandler({ graphqlPath: GRAPHQL_PATH });

  let shuttingDown = false;
  attachRoutes(httpServer, {
    graphqlPath: GRAPHQL_PATH,
    graphql: handle,
    ui,
    readiness,
    isShuttingDown: () => shuttingDown,
    metrics,
    beforeScrape: async () => {
      if (responseCache) metrics.responseCacheBytes.set(responseCache.size().bytes);
      metrics.documentStoreBytes.set(documentStore.size().bytes);
      if (sqliteFile) metrics.databaseDiskFreeBytes.set((await diskSpaceOf(sqliteFile)).freeBytes);
      if (db.isOpen()) await Promise.all([countActiveRollouts(metrics, db.store.read), notifications.scrape()]);
    },
    originPolicy,
    logger,
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  }).catch(async (error) => {
    await apollo.stop().catch(() => undefined);
    await cleanupAll();
    throw error;
  });
  try {
    await manager.start();
  } catch (error) {
    await manager.stop().catch(() => undefined);
    await subscriptions.dispose();
    await apollo.stop().catch(() => undefined);
    await cleanupAll();
    throw error;
  }
  cleanups.push(() => manager.stop());
  const port = (httpServer.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `${config.tls ? 'https' : 'http'}://${hostForUrl}:${port}${GRAPHQL_PATH}`;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      shuttingDown = true;
      logger.info('shutting down');
      // Subscriptions first (clients get 1001 Going Away), then Apollo drains in-flight HTTP requests and closes the
      // listener, then workers and the simulator, and the database last.
      await subscriptions.dispose();
      await apollo.stop();
      await cleanupAll();
      logger.info('stopped');
    })());

  return { url, port, config, logger, metrics, db, bus, domain, kube, manager, stop };
}
