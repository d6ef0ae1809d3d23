import type { Config } from './config.js';
import type { Domain } from './domain/Domain.js';
import type { EventBus } from './domain/EventBus.js';
import type { Manager } from './controller/Manager.js';
import { planDemoPrometheus } from './analysis/demoPrometheus.js';
import { startKubernetes, type KubeConnection } from './kubeConnection.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, type AppMetrics } from './metrics.js';
import { startApi } from './start/api.js';
import { clusterPortsOf } from './start/clusterPorts.js';
import { compose } from './start/compose.js';
import type { MemberRuntimes } from './clusters/MemberRuntimes.js';
import { startControllers } from './start/controllers.js';
import { startHistory } from './start/history.js';
import { type MemberClustersPart, startMemberClusters } from './start/memberClusters.js';
import type { Database } from './store/db.js';

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
  /** The member cluster registry, connections and sources (docs/adr/0048-member-clusters.md). */
  memberClusters: MemberClustersPart;
  /** The members' own controllers, while this replica leads (docs/adr/0055-runtime-per-member.md). */
  memberRuntimes: MemberRuntimes | undefined;
  /** Graceful shutdown; idempotent. */
  stop(): Promise<void>;
}

/**
 * The composition root (docs/adr/0038): history → Kubernetes → member clusters → controllers → API, each starter returning `{ stop }`;
 * the manager runs once the API listens. One unwind stops what started in reverse order, on shutdown and when a
 * later starter fails.
 */
export async function startApp(given: Config, options: { logger?: Logger } = {}): Promise<App> {
  const logger = options.logger ?? createLogger(given.logLevel, given.logFormat);
  const metrics = createMetrics();
  // The analysis demo's Prometheus (ROLLPLANE_SIM_PROMETHEUS=on): its URL is rollplane's from the start.
  const demoPrometheus = await planDemoPrometheus(given, logger);
  const config = demoPrometheus?.config ?? given;
  const app = await compose(logger, async (started) => {
    const history = started(await startHistory(config, { logger, metrics }));
    const kube = started(await startKubernetes(config, logger));
    if (demoPrometheus) started(await demoPrometheus.start(kube.simulatorMetrics ?? []));
    const memberClusters = started(await startMemberClusters(config, { logger, metrics, history, kube }));
    const controllers = started(await startControllers(config, { logger, metrics, history, kube, members: memberClusters.connections }));
    const readiness = [...history.readiness, kube.readiness, controllers.readiness];
    const domain: Domain = {
      ...controllers.domain,
      clusters: memberClusters.admin,
      clusterPorts: clusterPortsOf(controllers.domain, memberClusters.registry, memberClusters.connections, controllers.memberRuntimes, logger),
    };
    const api = started(await startApi(config, { logger, metrics, history, domain, readiness, scrape: controllers.scrape }));
    await controllers.run();
    return {
      url: api.url,
      port: api.port,
      config,
      logger,
      metrics,
      db: history.db,
      bus: history.bus,
      domain,
      kube,
      manager: controllers.manager,
      memberClusters,
      memberRuntimes: controllers.memberRuntimes,
    };
  });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('shutting down');
      await app.stop();
      logger.info('stopped');
    })());
  return { ...app, stop };
}
