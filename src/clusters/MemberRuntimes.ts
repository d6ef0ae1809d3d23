import { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { Manager } from '../controller/Manager.js';
import { RolloutControllerHost } from '../controllers/RolloutControllerHost.js';
import type { ClusterDrivers } from '../domain/ClusterRoutedDriver.js';
import { type ClusterHealth, LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { EventLog } from '../domain/EventLog.js';
import type { RolloutKind } from '../domain/events.js';
import type { InFlightChanges } from '../domain/InFlightChanges.js';
import type { RolloutDriver } from '../domain/ports.js';
import type { RolloutService } from '../domain/RolloutService.js';
import { kubeClientsOf } from '../kube/createKubeClients.js';
import type { ControllerHost } from '../controllers/host.js';
import type { KindPorts } from '../domain/Domain.js';
import type { Logger } from '../log.js';
import type { MemberClusters } from './MemberClusters.js';
import type { MemberConnection } from './MemberConnection.js';

/** The kinds' query ports on a member's caches (each kind's field of KindPorts). */
export type MemberQueries = Partial<KindPorts>;

/**
 * What a member's runtime needs of a rollout kind: its name and its setup on a host (the kinds' modules are this; the
 * composition root hands them in, so nothing here names a kind).
 */
export interface KindSetup {
  readonly kind: RolloutKind;
  setup(host: ControllerHost): { driver: RolloutDriver; queries: MemberQueries };
}

export interface MemberRuntimesOptions {
  config: Config;
  connections: Pick<MemberClusters, 'get' | 'snapshots' | 'onHealth'>;
  /** The kinds' modules; each member sets up those its discovery found. */
  modules: readonly KindSetup[];
  events: EventLog;
  /** `local`'s view; each member's runtime gets its own (InFlightChanges.forCluster). */
  inFlight: InFlightChanges;
  rollouts?: Pick<RolloutService, 'list' | 'allTargets'>;
  /** Where a member's controllers report a target change (the engine's targetChanged, with the member's name). */
  targetChanged(kind: RolloutKind, namespace: string, name: string, cluster: string): void;
  logger: Logger;
  /** Between the runtimes' reconciles when nothing else triggers one (health changes and leadership do). */
  resyncMs?: number;
}

/** One member cluster's own controllers: a Manager (informers, work queues) on the member's connection. */
class MemberRuntime {
  readonly drivers = new Map<RolloutKind, RolloutDriver>();
  /** The kinds' query ports on this member's caches: what a bump plans a member's targets from (clusterSelection.ts). */
  readonly queries: MemberQueries = {};
  private readonly manager: Manager;
  private synced = false;
  private stopped = false;

  constructor(
    readonly name: string,
    readonly kinds: readonly RolloutKind[],
    readonly connection: MemberConnection,
    options: MemberRuntimesOptions,
  ) {
    const logger = options.logger.child({ cluster: name });
    const clients = kubeClientsOf(connection.kubeConfig);
    // Its own registry: the kinds' and the runtime's metrics are registered per runtime, and one registry would refuse
    // the second cluster's (rollplane_cluster_* say each member's health; per-member runtime metrics are ADR 0055's
    // next step).
    const registry = new Registry();
    // No Lease of its own: the runtime runs only while this replica leads (MemberRuntimes), so its controllers run at once.
    this.manager = new Manager({
      clients,
      registry,
      logger,
      leaderElection: { ...options.config.leaderElection, enabled: false },
    });
    const host = new RolloutControllerHost({
      cluster: name,
      config: options.config,
      clients,
      manager: this.manager,
      logger,
      events: options.events,
      inFlight: options.inFlight.forCluster(name),
      ...(options.rollouts ? { rollouts: options.rollouts } : {}),
    });
    host.onTargetChanged((kind, namespace, target) => options.targetChanged(kind, namespace, target, name));
    for (const module of options.modules.filter((m) => kinds.includes(m.kind))) {
      const runtime = module.setup(host);
      this.drivers.set(module.kind, runtime.driver);
      Object.assign(this.queries, runtime.queries);
    }
  }

  /** Starts the informers and, once their caches synced, the controllers; drivers are handed out only from then on. */
  start(log: Logger): void {
    this.manager.start().then(
      () => {
        this.synced = !this.stopped;
        if (this.synced) log.info({ cluster: this.name, kinds: this.kinds }, 'member cluster controllers running');
      },
      (error: unknown) => log.warn({ cluster: this.name, err: error }, 'member cluster controllers failed to start'),
    );
  }

  isRunning(): boolean {
    return this.synced && !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.manager.stop();
  }
}

/**
 * The member clusters' runtimes (docs/adr/0055-runtime-per-member.md): while this replica leads, every member other
 * than `local` that is READY with discovered kinds has its own runtime — informers and work queues on its own
 * connection (client, API budget, bounded requests) — running the kinds it serves. Nothing is shared between members
 * and nothing here awaits a network call while deciding: a slow or black-holed member delays its own queues only.
 * A member that stops being READY, is deregistered, or changes its kinds has its runtime stopped (and a new one
 * started when it is back). `local` keeps the runtime it always had (src/start/controllers.ts).
 *
 * The seam for sharding (ADR 0055): `shouldRun(name)` is where a replica will ask whether it holds the member's shard
 * Lease; today it is "this replica leads".
 */
export class MemberRuntimes implements ClusterDrivers {
  private readonly runtimes = new Map<string, MemberRuntime>();
  private readonly stopping = new Set<Promise<void>>();
  private leading = false;
  private closed = false;
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: MemberRuntimesOptions) {
    this.unsubscribe = options.connections.onHealth(() => this.reconcile());
  }

  /** This replica started leading: run the members' runtimes. */
  startLeading(): void {
    this.leading = true;
    this.reconcile();
    if (this.options.resyncMs && !this.timer) {
      this.timer = setInterval(() => this.reconcile(), this.options.resyncMs);
      this.timer.unref();
    }
  }

  /** This replica stopped leading: stop every member's runtime, and wait for them. */
  async stopLeading(): Promise<void> {
    this.leading = false;
    this.reconcile();
    await this.drain();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.timer);
    await this.stopLeading();
  }

  driverOf(cluster: string, kind: RolloutKind): RolloutDriver | undefined {
    return this.driven(cluster)?.drivers.get(kind);
  }

  /** The member's query ports (its caches), while its runtime runs and it is READY; undefined otherwise. */
  queriesOf(cluster: string): MemberQueries | undefined {
    return this.driven(cluster)?.queries;
  }

  /** The member's runtime while it runs (caches synced) and the member is READY. */
  private driven(cluster: string): MemberRuntime | undefined {
    const runtime = this.runtimes.get(cluster);
    return runtime?.isRunning() && this.options.connections.get(cluster)?.health().state === 'READY' ? runtime : undefined;
  }

  whyNotDriven(cluster: string, kind: RolloutKind): string {
    const connection = this.options.connections.get(cluster);
    if (!connection) return `member cluster ${cluster} is not registered (or was deregistered): its targets wait`;
    const health = connection.health();
    if (health.state !== 'READY') {
      return `member cluster ${cluster} is ${health.state} since ${health.since.toISOString()}${health.message ? ` (${health.message})` : ''}: its targets wait`;
    }
    if (!health.kinds.includes(kind)) return `member cluster ${cluster} does not serve ${kind} (discovery): its targets wait`;
    if (!this.leading) return `member cluster ${cluster}: this replica does not drive it`;
    return `member cluster ${cluster}: its controllers are starting (caches syncing)`;
  }

  /** The members with a runtime, and whether it runs (diagnostics, tests). */
  snapshot(): { cluster: string; kinds: readonly RolloutKind[]; running: boolean }[] {
    return [...this.runtimes.values()]
      .map((r) => ({ cluster: r.name, kinds: r.kinds, running: r.isRunning() }))
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
  }

  /** Makes the set of runtimes what the members' health says; starts and stops without waiting for either. */
  reconcile(): void {
    const desired = new Map<string, { connection: MemberConnection; health: ClusterHealth }>();
    if (this.leading && !this.closed) {
      for (const { name } of this.options.connections.snapshots()) {
        const connection = this.options.connections.get(name);
        if (!connection || !this.shouldRun(name)) continue;
        const health = connection.health();
        if (health.state === 'READY' && health.kinds.length > 0) desired.set(name, { connection, health });
      }
    }
    for (const [name, runtime] of this.runtimes) {
      const want = desired.get(name);
      if (want && want.connection === runtime.connection && want.health.kinds.join() === runtime.kinds.join()) continue;
      this.runtimes.delete(name);
      this.stopRuntime(runtime);
    }
    for (const [name, { connection, health }] of desired) {
      if (this.runtimes.has(name)) continue;
      const runtime = new MemberRuntime(name, [...health.kinds], connection, this.options);
      this.runtimes.set(name, runtime);
      runtime.start(this.options.logger);
    }
  }

  /** Whether this replica drives the member: the shard seam (ADR 0055). */
  private shouldRun(name: string): boolean {
    return name !== LOCAL_CLUSTER;
  }

  private stopRuntime(runtime: MemberRuntime): void {
    this.options.logger.info({ cluster: runtime.name }, 'member cluster controllers stopping');
    const stop = runtime
      .stop()
      .catch((error: unknown) => this.options.logger.warn({ cluster: runtime.name, err: error }, 'member cluster controllers did not stop cleanly'))
      .finally(() => this.stopping.delete(stop));
    this.stopping.add(stop);
  }

  private async drain(): Promise<void> {
    while (this.stopping.size > 0) await Promise.all(this.stopping);
  }
}
