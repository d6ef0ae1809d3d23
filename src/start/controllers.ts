import type { Config } from '../config.js';
import { Manager } from '../controller/Manager.js';
import { ROLLOUT_KIND_MODULES, setupRolloutKinds } from '../kinds/index.js';
import { MemberRuntimes, type MemberRuntimesOptions } from '../clusters/MemberRuntimes.js';
import { ShardLeases } from '../clusters/ShardLeases.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { ClusterRoutedDriver, clustersOfRollout } from '../domain/ClusterRoutedDriver.js';
import { RolloutControllerHost } from '../controllers/RolloutControllerHost.js';
import type { Domain } from '../domain/Domain.js';
import { runEngineOnManager } from '../domain/engineController.js';
import { InFlightChanges } from '../domain/InFlightChanges.js';
import { RolloutEngine } from '../domain/RolloutEngine.js';
import { RolloutLauncher } from '../domain/RolloutLauncher.js';
import { WindowAnnouncer } from '../domain/waves/WindowAnnouncer.js';
import { createKubeClients } from '../kube/index.js';
import type { KubeConnection } from '../kubeConnection.js';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import { startNotifications } from '../notify/startNotifications.js';
import { leadershipGuard } from '../store/health.js';
import { VERSION } from '../version.js';
import { compose } from './compose.js';
import type { History } from './history.js';

/**
 * The controller manager with the rollout kinds (src/kinds/index.ts, the one list of them), the rollout engine on
 * it and the notifications outbox; and the Domain the API serves. `run()` starts the manager (informers, lease,
 * controllers) once the API listens; `stop` stops it.
 */
export async function startControllers(
  config: Config,
  {
    logger,
    metrics,
    history,
    kube,
    members,
  }: {
    logger: Logger;
    metrics: AppMetrics;
    history: History;
    kube: KubeConnection;
    /** The member clusters' connections: each READY member gets its own runtime while this replica leads (ADR 0055). */
    members?: MemberRuntimesOptions['connections'];
  },
) {
  return compose(logger, async (started) => {
    const { db, bus, events, rollouts } = history;
    const engine = new RolloutEngine(rollouts, logger.child({ component: 'engine' }), {
      // Maintenance windows select clusters by their labels as registered now (issue 30).
      clusterLabels: async () => new Map((await db.memberClusters.list()).map((c) => [c.name, c.labels])),
      clusterHealth: async () => new Map((await db.memberClusters.list()).map((c) => [c.name, c.health.state])),
      ...(rollouts.targetGates ? { targetGates: rollouts.targetGates } : {}),
    });
    const launcher = new RolloutLauncher(rollouts);
    // A gate that got an answer (an analysis decided, a check answered) wakes its rollout; gates work while leading.
    history.gateTypes.wakeWith((rolloutId) => engine.enqueue(rolloutId));
    const clients = createKubeClients({
      mode: kube.mode,
      ...((kube.kubeconfigPath ?? config.kube.kubeconfigPath) ? { kubeconfigPath: kube.kubeconfigPath ?? config.kube.kubeconfigPath } : {}),
      qps: config.kube.qps,
      burst: config.kube.burst,
      requestTimeoutMs: config.kube.requestTimeoutMs,
      registry: metrics.registry,
    });
    const manager = new Manager({
      clients,
      registry: metrics.registry,
      logger,
      leaderElection: config.leaderElection,
      runControllers: config.controllers,
      ...leadershipGuard(db),
    });
    history.gateTypes.lead(manager);
    const inFlight = new InFlightChanges(db.store, events);
    const host = new RolloutControllerHost({ config, clients, manager, logger, events, inFlight, rollouts });
    const kinds = setupRolloutKinds(host);
    const runtimes = members
      ? new MemberRuntimes({
          config,
          connections: members,
          modules: ROLLOUT_KIND_MODULES,
          events,
          inFlight,
          rollouts,
          bus,
          identity: manager.identity,
          runControllers: config.controllers,
          targetChanged: (kind, namespace, name, cluster) => engine.targetChanged(kind, namespace, name, cluster),
          logger: logger.child({ component: 'member-runtimes' }),
          resyncMs: config.memberClusters.probeIntervalMs,
          registries: metrics.members,
        })
      : undefined;
    for (const driver of kinds.drivers) {
      engine.registerDriver(
        runtimes ? new ClusterRoutedDriver(driver, runtimes, clustersOfRollout(rollouts), (cluster) => inFlight.reloadCluster(cluster)) : driver,
      );
    }
    // With leader election, the members are spread over the replicas by shard Leases (ADR 0059); without it this one
    // replica drives them all while it runs (as local's controllers).
    const shards =
      runtimes && config.controllers && config.leaderElection.enabled
        ? new ShardLeases({
            coordination: clients.coordination,
            namespace: config.leaderElection.namespace,
            name: config.leaderElection.name,
            shards: config.memberClusters.shards,
            identity: manager.identity,
            leaseDurationMs: config.leaderElection.leaseDurationMs,
            renewDeadlineMs: config.leaderElection.renewDeadlineMs,
            retryPeriodMs: config.leaderElection.retryPeriodMs,
            ...leadershipGuard(db),
            onAcquired: () => runtimes.reconcile(),
            onReleased: (shard) => runtimes.releaseShard(shard),
            registry: metrics.registry,
            logger: logger.child({ component: 'shard-leases' }),
          })
        : undefined;
    if (runtimes) {
      if (shards) runtimes.useShards(shards);
      else {
        // Leader-only, as local's controllers: started with them, stopped with them (and before the manager's informers).
        manager.onStartedLeading(() => runtimes.startLeading());
        manager.onStoppedLeading(() => runtimes.stopLeading());
      }
      started(() => runtimes.close());
    }
    // Window policies opening and closing, announced by the leader (issue 30); each change once, whoever leads.
    const announcer = new WindowAnnouncer({
      windows: rollouts.windows,
      log: events,
      clusters: async () => (await db.memberClusters.list()).map((c) => ({ name: c.name, labels: c.labels })),
      logger: logger.child({ component: 'window-announcer' }),
    });
    manager.onStartedLeading(() => announcer.start());
    manager.onStoppedLeading(() => announcer.stop());
    started(async () => announcer.stop());
    runEngineOnManager({
      engine,
      launcher,
      manager,
      bus,
      workers: config.rollouts.workers,
      onTargetChanged: (listener) => host.onTargetChanged(listener),
      logger,
    });
    // During a database outage every reconcile failed and backed off (up to a minute): resume at once when it is back.
    history.onDatabaseBack(() => {
      logger.info('the database is reachable again: resyncing the controllers');
      manager.resync();
    });
    // Notifications: the admin service here; the outbox is sent by the leader only (a controller of the manager).
    const notifications = started(startNotifications({ config, store: db.notifications, manager, bus, metrics, logger }));
    started(() => manager.stop());
    const domain: Domain = {
      facts: { version: VERSION, kubeMode: config.kube.mode, startedAt: new Date() },
      events,
      rollouts,
      launcher,
      engine,
      ...kinds.queries,
      workQueues: () => host.queueSnapshots(),
      tokens: history.tokens,
      audit: history.audit,
      notifications: notifications.service,
    };
    return {
      manager,
      memberRuntimes: runtimes,
      domain,
      scrape: () => notifications.scrape(),
      readiness: { name: 'controllers', check: async () => manager.checkReady() },
      run: async () => {
        // The members' caches on every replica (the API plans and answers from them); their controllers where this
        // replica holds their shard. Stopped before the runtimes close (compose stops in reverse order).
        if (shards || !config.controllers) runtimes?.start();
        if (shards && members) {
          // Only once there is a member to share: a deployment of `local` alone takes no shard Leases.
          const startShards = () => {
            if (members.snapshots().some((member) => member.name !== LOCAL_CLUSTER)) shards.start();
          };
          started(() => shards.stop());
          // Registered after the stop, so undone before it: no health change starts them again while they stop.
          const unsubscribe = members.onHealth(startShards);
          started(async () => unsubscribe());
          startShards();
        }
        await manager.start();
      },
    };
  });
}
