import { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { Manager } from '../controller/Manager.js';
import { RolloutControllerHost } from '../controllers/RolloutControllerHost.js';
import type { ClusterDrivers, MemberChanges } from '../domain/ClusterRoutedDriver.js';
import { MemberChangeFeed } from './memberChangeFeed.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer, InformerOptions } from '../controller/Informer.js';
import { type ClusterHealth, isDriven, LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { httpStatusOf } from '../kube/errors.js';
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
import { FAILED_LISTS_BEFORE_DEGRADED, listFailure, type MemberConnection } from './MemberConnection.js';
import { MemberTargetExecutor } from './MemberTargetExecutor.js';
import type { EventBus } from '../domain/EventBus.js';
import { UnavailableError } from '../errors.js';
import { VERSION } from '../version.js';

/**
 * Which member clusters' controllers this replica runs (ShardLeases implements it): a member belongs to a shard, and
 * its controllers run on the replica holding that shard's Lease.
 */
export interface ShardHolds {
  shardOf(cluster: string): number;
  /** This replica holds the shard (its controllers may run). */
  holds(shard: number): boolean;
  /** …and by its own clock at this instant (the fence every write to a member passes). */
  holdsFreshly(shard: number): boolean;
}

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
  rollouts?: Pick<RolloutService, 'list' | 'allTargets' | 'targets' | 'get' | 'activeRolloutIdsInCluster' | 'noteWaiting'>;
  /** The history's bus (every replica's events on PostgreSQL): each member's target executor hears admissions on it. */
  bus?: Pick<EventBus, 'subscribe'>;
  /** This replica's identity, sent as the User-Agent of its requests to members (audits tell the replicas apart). */
  identity?: string;
  /** Run members' controllers at all (false on an API-only replica: caches only). Default true. */
  runControllers?: boolean;
  /** Where a member's controllers report a target change (the engine's targetChanged, with the member's name). */
  targetChanged(kind: RolloutKind, namespace: string, name: string, cluster: string): void;
  logger: Logger;
  /** Where a member's runtime registers its metrics (labelled with its cluster on /metrics); a private registry if absent. */
  registries?: { registryFor(cluster: string): Registry; release(cluster: string, registry: Registry): void };
  /** Between the runtimes' reconciles when nothing else triggers one (health changes and leadership do). */
  resyncMs?: number;
}

/**
 * One member cluster's runtime: a Manager (informers, work queues) on the member's connection. Its informers run on
 * every replica (the API plans and answers from them); its controllers and its target executor only while this
 * replica holds the member's shard (`lead`, `unlead`).
 */
class MemberRuntime {
  readonly drivers = new Map<RolloutKind, RolloutDriver>();
  /** The kinds' query ports on this member's caches: what a bump plans a member's targets from (clusterSelection.ts). */
  readonly queries: MemberQueries = {};
  readonly executor: MemberTargetExecutor | undefined;
  private readonly manager: Manager;
  /** Takes its series off /metrics. */
  private readonly releaseMetrics: () => void;
  private synced = false;
  private stopped = false;
  /** The informers each kind asked for (shared ones under each kind that asked). */
  private readonly informersOf = new Map<RolloutKind, Set<Informer<KubernetesObject>>>();
  /** The last list failure of an informer not synced yet, in a code, and how many in a row. */
  private readonly syncFailures = new Map<Informer<KubernetesObject>, { reason: string; failures: number }>();
  /** Whether the controllers should run; `transition` makes it so, one change at a time. */
  private wantLead = false;
  private leading = false;
  private transition: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly kinds: readonly RolloutKind[],
    readonly connection: MemberConnection,
    options: MemberRuntimesOptions,
    private readonly onSynced: () => void,
    /** Any of its caches changed, or its drivers came or went (MemberChangeFeed). */
    private readonly changed: () => void,
  ) {
    const logger = options.logger.child({ cluster: name });
    const clients = kubeClientsOf(connection.kubeConfig);
    // Its own registry: one registry would refuse the second cluster's metrics of a name. /metrics shows it with a
    // `cluster` label while the runtime runs (ADR 0060).
    const registry = options.registries?.registryFor(name) ?? new Registry();
    this.releaseMetrics = () => options.registries?.release(name, registry);
    // No Lease of its own: its controllers run while this replica holds the member's shard (MemberRuntimes says when).
    this.manager = new Manager({
      clients,
      registry,
      logger,
      leaderElection: { ...options.config.leaderElection, enabled: false },
      leadOnDemand: true,
      runControllers: options.runControllers ?? true,
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
      const runtime = module.setup(this.hostOfKind(host, module.kind, connection));
      this.drivers.set(module.kind, runtime.driver);
      Object.assign(this.queries, runtime.queries);
    }
    if (options.rollouts && options.bus) {
      const executor = new MemberTargetExecutor({ cluster: name, drivers: this.drivers, rollouts: options.rollouts, bus: options.bus, logger });
      this.executor = executor;
      // After the host's own listener (the in-flight notes reloaded) and before the controllers; stopped after them.
      this.manager.onStartedLeading(() => executor.start());
      this.manager.onStoppedLeading(() => executor.stop());
    }
  }

  /**
   * The host a kind is set up on: the runtime's, but every informer the kind asks for is noted under it, and a list that
   * fails before its cache first synced is told to the connection — at once when it answers 404 (the kind is not served),
   * after FAILED_LISTS_BEFORE_DEGRADED failures in a row otherwise — which sets the kind aside so that the runtime
   * restarts with the kinds it can read (ADR 0066). Without it one kind's failing list kept every kind unread for ever.
   */
  private hostOfKind(host: RolloutControllerHost, kind: RolloutKind, connection: MemberConnection): RolloutControllerHost {
    const used = new Set<Informer<KubernetesObject>>();
    this.informersOf.set(kind, used);
    const scoped = Object.create(host) as RolloutControllerHost;
    scoped.informer = <T extends KubernetesObject>(options: Omit<InformerOptions<T>, 'watch'>): Informer<T> => {
      // The callback runs after a list failed, long after `informer` is assigned (a shared informer keeps its first
      // caller's options: that caller's callback, about the same informer, serves every kind that uses it).
      const informer: Informer<T> = host.informer<T>({
        ...options,
        onSyncFailure: (error, failures) => {
          options.onSyncFailure?.(error, failures);
          this.listFailed(informer as unknown as Informer<KubernetesObject>, error, failures, connection);
        },
      });
      const added = !used.has(informer as unknown as Informer<KubernetesObject>);
      used.add(informer as unknown as Informer<KubernetesObject>);
      if (added) informer.addEventHandler({ onAdd: this.changed, onUpdate: this.changed, onDelete: this.changed });
      return informer;
    };
    return scoped;
  }

  private listFailed(informer: Informer<KubernetesObject>, error: unknown, failures: number, connection: MemberConnection): void {
    if (this.stopped) return;
    const notServed = httpStatusOf(error) === 404;
    const reason = listFailure(informer.name, error, connection.requestTimeoutMs);
    this.syncFailures.set(informer, { reason, failures });
    if (!notServed && failures < FAILED_LISTS_BEFORE_DEGRADED) return;
    for (const [kind, used] of this.informersOf) {
      if (!used.has(informer)) continue;
      connection.kindUnreadable(kind, {
        state: notServed ? 'NOT_SERVED' : 'FAILING',
        collection: informer.name,
        reason,
        failedLists: failures,
        check: () => informer.listOnePage(),
      });
    }
  }

  /** Why a kind's caches are not synced yet, when one of its lists failed (`ippools list: HTTP 500, 2 times in a row`). */
  syncingBecause(kind: RolloutKind): string | undefined {
    for (const informer of this.informersOf.get(kind) ?? []) {
      const failed = informer.hasSynced() ? undefined : this.syncFailures.get(informer);
      if (failed) return `${failed.reason}, ${failed.failures} time${failed.failures === 1 ? '' : 's'} in a row`;
    }
    return undefined;
  }

  /** Starts the informers; once their caches synced, the drivers (for observing) are handed out. */
  start(log: Logger): void {
    this.manager.start().then(
      () => {
        this.synced = !this.stopped;
        this.changed();
        if (this.synced) {
          for (const kind of this.kinds) this.connection.kindReadable(kind);
          log.info({ cluster: this.name, kinds: this.kinds }, 'member cluster caches synced');
          this.onSynced();
        }
      },
      (error: unknown) => log.warn({ cluster: this.name, err: error }, 'member cluster runtime failed to start'),
    );
  }

  isRunning(): boolean {
    return this.synced && !this.stopped;
  }

  /** Its caches are being filled for the first time (nothing in them can be counted on yet). */
  isSyncing(): boolean {
    return !this.synced && !this.stopped;
  }

  /** Whether its controllers (and target executor) run now. */
  isLeading(): boolean {
    return this.leading && !this.stopped;
  }

  /** Starts or stops its controllers (and executor); resolves once that is done, and with every earlier change. */
  setLeading(want: boolean, log: Logger): Promise<void> {
    if (want === this.wantLead && want === this.leading) return this.transition;
    this.wantLead = want;
    this.transition = this.transition.then(async () => {
      try {
        if (this.wantLead && !this.stopped && this.synced) {
          this.leading = await this.manager.lead();
          if (this.leading) log.info({ cluster: this.name }, 'member cluster controllers running');
        } else if (!this.wantLead && this.leading) {
          this.leading = false;
          await this.manager.unlead();
          log.info({ cluster: this.name }, 'member cluster controllers stopped');
        }
      } catch (error) {
        log.warn({ cluster: this.name, err: error }, 'member cluster controllers did not change cleanly');
      }
    });
    return this.transition;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.changed();
    this.releaseMetrics();
    this.wantLead = false;
    await this.transition;
    this.leading = false;
    await this.manager.stop();
  }
}

/**
 * The member clusters' runtimes (docs/adr/0055-runtime-per-member.md, docs/adr/0059-shard-leases.md): every member
 * other than `local` that is READY with discovered kinds has its own runtime on every replica — informers and work
 * queues on its own connection (client, API budget, bounded requests) — running the kinds it serves. Its caches serve
 * the API and the engine's observations on any replica; its controllers and target executor run only on the replica
 * that holds the member's shard (ShardHolds; without shards, on the replica that leads). Nothing is shared between
 * members and nothing here awaits a network call while deciding: a slow or black-holed member delays its own queues
 * only. A member that stops being READY, is deregistered, or changes its kinds has its runtime stopped (and a new one
 * started when it is back). `local` keeps the runtime it always had (src/start/controllers.ts).
 */
export class MemberRuntimes implements ClusterDrivers {
  private readonly runtimes = new Map<string, MemberRuntime>();
  private readonly changes = new MemberChangeFeed();
  private readonly stopping = new Set<Promise<void>>();
  private started = false;
  private leading = false;
  private closed = false;
  private shards: ShardHolds | undefined;
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;
  /** The next reconcile for a member whose caches are kept past its last answer (cacheGraceMs). */
  private graceTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: MemberRuntimesOptions) {
    this.unsubscribe = options.connections.onHealth((name) => {
      // Whether it is driven follows its health (synced); a member's drivers answer differently from now on.
      this.changes.note(name);
      this.reconcile();
    });
  }

  /** Runs the members' runtimes (caches) from now on; controllers where this replica drives the member. */
  start(): void {
    this.started = true;
    this.reconcile();
    if (this.options.resyncMs && !this.timer) {
      this.timer = setInterval(() => {
        this.reconcile();
        for (const runtime of this.runtimes.values()) if (runtime.isLeading()) runtime.executor?.resync();
        this.markWaitingWork();
      }, this.options.resyncMs);
      this.timer.unref();
    }
  }

  /** From now on, a member's controllers run where this replica holds the member's shard (instead of where it leads). */
  useShards(shards: ShardHolds): void {
    this.shards = shards;
    this.reconcile();
  }

  /** This replica started leading (without shards: the members' controllers run here). */
  startLeading(): void {
    this.leading = true;
    this.start();
  }

  /** This replica stopped leading (without shards: stop every member's controllers, and wait for them). */
  async stopLeading(): Promise<void> {
    this.leading = false;
    this.reconcile();
    await Promise.all([...this.runtimes.values()].map((runtime) => runtime.setLeading(this.shouldDrive(runtime.name), this.options.logger)));
    await this.drain();
  }

  /** A shard is being given up: stop its members' controllers and executors, and wait for them (and for every runtime stopping). */
  async releaseShard(shard: number): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const runtime of this.runtimes.values()) {
      if (this.shards?.shardOf(runtime.name) === shard) waits.push(runtime.setLeading(false, this.options.logger));
    }
    await Promise.all(waits);
    await this.drain();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.timer);
    clearTimeout(this.graceTimer);
    this.reconcile();
    await this.drain();
  }

  /** The kind's driver on the member's caches (for observing: any replica), while they are synced and it is READY. */
  driverOf(cluster: string, kind: RolloutKind): RolloutDriver | undefined {
    return this.synced(cluster)?.drivers.get(kind);
  }

  countingDriverOf(cluster: string, kind: RolloutKind): RolloutDriver | 'syncing' | undefined {
    const runtime = this.runtimes.get(cluster);
    if (!runtime?.kinds.includes(kind)) return undefined;
    // Synced: driven, or unreachable within cacheGraceMs (a runtime kept is one that missed probes: its caches stay).
    if (runtime.isRunning()) return runtime.drivers.get(kind);
    const state = this.options.connections.get(cluster)?.health().state;
    return runtime.isSyncing() && state !== undefined && isDriven(state) ? 'syncing' : undefined;
  }

  changedSince(seq: number | undefined): MemberChanges {
    return this.changes.changedSince(seq);
  }

  /**
   * Where this replica makes the member's writes itself (it holds the member's shard, freshly, and its controllers
   * run): the member's target executor; undefined elsewhere (the holder's executor writes from the history).
   */
  writerOf(cluster: string): MemberTargetExecutor | undefined {
    const runtime = this.synced(cluster);
    if (!runtime?.isLeading() || !this.mayWrite(cluster)) return undefined;
    return runtime.executor?.running ? runtime.executor : undefined;
  }

  /** The member's query ports (its caches), while they are synced and it is READY; undefined otherwise. */
  queriesOf(cluster: string): MemberQueries | undefined {
    return this.synced(cluster)?.queries;
  }

  /** The member's runtime while its caches are synced and the member is driven (READY, or DEGRADED for its other kinds). */
  private synced(cluster: string): MemberRuntime | undefined {
    const runtime = this.runtimes.get(cluster);
    const state = this.options.connections.get(cluster)?.health().state;
    return runtime?.isRunning() && state !== undefined && isDriven(state) ? runtime : undefined;
  }

  /**
   * Why the engine cannot drive `kind` in the member now, asked for a target of it that waits: the member is told that
   * work waits on it, so it is probed again sooner than its grown backoff while it does not answer (attack 15, F5).
   */
  whyNotDriven(cluster: string, kind: RolloutKind): string {
    this.options.connections.get(cluster)?.workWaiting();
    return `${this.whyUnreadable(cluster, kind)}: its targets wait`;
  }

  /** Why `kind` cannot be read from the member's caches here, naming the member and the cause (for reads and plans). */
  whyUnreadable(cluster: string, kind: RolloutKind): string {
    const connection = this.options.connections.get(cluster);
    if (!connection) return `member cluster ${cluster} is not registered (or was deregistered)`;
    const health = connection.health();
    const issue = connection.kindIssues().get(kind);
    if (issue && isDriven(health.state)) {
      return issue.state === 'NOT_SERVED'
        ? `member cluster ${cluster} does not serve ${kind} (${issue.reason})`
        : `member cluster ${cluster} is DEGRADED: ${kind} cannot be read since ${issue.since.toISOString()} (${issue.reason}; retrying with backoff)`;
    }
    if (!isDriven(health.state)) {
      return `member cluster ${cluster} is ${health.state} since ${health.since.toISOString()}${health.message ? ` (${health.message})` : ''}`;
    }
    if (!health.kinds.includes(kind)) return `member cluster ${cluster} does not serve ${kind} (discovery)`;
    if (!this.started || this.closed) return `member cluster ${cluster}: this replica does not drive it`;
    const because = this.runtimes.get(cluster)?.syncingBecause(kind);
    return `member cluster ${cluster}: its caches are syncing${because ? ` (${because})` : ''}`;
  }

  /**
   * The members with a runtime: `running` while its caches are synced and it is driven (what the engine and the API
   * use); `cachesKept` while its caches are synced but it is not driven (missed probes, within cacheGraceMs);
   * `leading` while its controllers run here.
   */
  snapshot(): { cluster: string; kinds: readonly RolloutKind[]; running: boolean; cachesKept: boolean; leading: boolean }[] {
    return [...this.runtimes.values()]
      .map((r) => {
        const synced = r.isRunning();
        const driven = synced && this.synced(r.name) !== undefined;
        return { cluster: r.name, kinds: r.kinds, running: driven, cachesKept: synced && !driven, leading: r.isLeading() };
      })
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
  }

  /** Makes the set of runtimes what the members' health says, and their controllers what the shards say; never waits. */
  reconcile(): void {
    const desired = new Map<string, { connection: MemberConnection; health: ClusterHealth }>();
    if (this.started && !this.closed) {
      for (const { name } of this.options.connections.snapshots()) {
        const connection = this.options.connections.get(name);
        if (!connection || name === LOCAL_CLUSTER) continue;
        const health = connection.health();
        if (isDriven(health.state) && health.kinds.length > 0) desired.set(name, { connection, health });
      }
    }
    let graceEnds = Number.POSITIVE_INFINITY;
    for (const [name, runtime] of this.runtimes) {
      const want = desired.get(name);
      if (want && want.connection === runtime.connection && want.health.kinds.join() === runtime.kinds.join()) continue;
      const keptUntil = want ? undefined : this.cachesKeptUntil(runtime);
      if (keptUntil !== undefined) {
        graceEnds = Math.min(graceEnds, keptUntil);
        continue;
      }
      this.runtimes.delete(name);
      this.stopRuntime(runtime);
    }
    this.reconcileAt(graceEnds);
    for (const [name, { connection, health }] of desired) {
      if (this.runtimes.has(name)) continue;
      this.fence(name, connection);
      const runtime = new MemberRuntime(
        name,
        [...health.kinds],
        connection,
        this.options,
        () => this.reconcile(),
        () => this.changes.note(name),
      );
      this.runtimes.set(name, runtime);
      runtime.start(this.options.logger);
    }
    for (const runtime of this.runtimes.values()) {
      if (runtime.isRunning()) void runtime.setLeading(desired.has(runtime.name) && this.shouldDrive(runtime.name), this.options.logger);
    }
  }

  /**
   * Until when a member's caches are kept although it is not driven: it stopped answering its probes (UNREACHABLE
   * after a failed probe, not a refused answer: that one's informers are what sent it) less than cacheGraceMs ago, on
   * the same connection. Its controllers stop and nothing reads its caches (synced() asks for a driven member), but its
   * informers keep retrying their watches, so a member back within the grace needs no re-list. At 1,000 members a
   * loaded replica missed probes; dropping every missed member's caches and re-listing them all when it answered made
   * the load that made the next probes miss (the 1,000-cluster rollout bench never got every member driven).
   */
  private cachesKeptUntil(runtime: MemberRuntime): number | undefined {
    const graceMs = this.options.config.memberClusters.cacheGraceMs;
    const connection = this.options.connections.get(runtime.name);
    if (!this.started || this.closed || graceMs === 0 || connection !== runtime.connection) return undefined;
    const health = connection.health();
    if (health.state !== 'UNREACHABLE' || connection.snapshot().failures === 0) return undefined;
    const until = health.since.getTime() + graceMs;
    return until > Date.now() ? until : undefined;
  }

  /** One reconcile when the earliest kept member's grace ends (none pending when no member is kept). */
  private reconcileAt(at: number): void {
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    if (!Number.isFinite(at) || this.closed) return;
    this.graceTimer = setTimeout(() => this.reconcile(), Math.max(0, at - Date.now()) + 10);
    this.graceTimer.unref();
  }

  /**
   * Members this replica would drive (it holds their shard) that do not answer while an active rollout has targets in
   * them: their connections hear that work waits, so they are probed again soon (ADR 0066). The engine's own look at a
   * waiting target does the same, but only on the engine's replica; the writes are made by the shard's holder, whose
   * connection must see the member answer too.
   */
  private markWaitingWork(): void {
    const rollouts = this.options.rollouts;
    if (!rollouts || !this.started || this.closed) return;
    for (const { name } of this.options.connections.snapshots()) {
      const connection = this.options.connections.get(name);
      if (name === LOCAL_CLUSTER || !connection || isDriven(connection.health().state) || !this.shouldDrive(name)) continue;
      rollouts.activeRolloutIdsInCluster(name).then(
        (ids) => {
          if (ids.length > 0) connection.workWaiting();
        },
        (error: unknown) => this.options.logger.debug({ cluster: name, err: error }, 'could not read the active rollouts of a member'),
      );
    }
  }

  /** Whether this replica runs the member's controllers: the shard seam (ADR 0055, 0059). */
  private shouldDrive(name: string): boolean {
    if (this.closed || this.options.runControllers === false) return false;
    return this.shards ? this.shards.holds(this.shards.shardOf(name)) : this.leading;
  }

  /** Whether a write to the member may be sent now: this replica holds its shard by its own clock (or leads, without shards). */
  private mayWrite(name: string): boolean {
    if (this.closed) return false;
    return this.shards ? this.shards.holdsFreshly(this.shards.shardOf(name)) : this.leading;
  }

  /**
   * Every request to the member names this replica (User-Agent), and a write is refused unless this replica may write
   * now: a process resumed after SIGSTOP, past its renew deadline, must not write before it notices that it lost the shard.
   * Dry runs change nothing and pass.
   */
  private fence(name: string, connection: MemberConnection): void {
    const userAgent = `rollplane/${VERSION} (${this.options.identity ?? 'replica'})`;
    connection.kubeConfig.beforeSend = (request) => {
      request.setHeader('User-Agent', userAgent);
      if (request.method === 'GET' || request.method === 'HEAD' || /[?&]dryRun=All(&|$)/.test(request.url)) return;
      if (!this.mayWrite(name)) {
        throw new UnavailableError(`member cluster ${name}: not written from this replica, which does not hold its shard now`);
      }
    };
  }

  private stopRuntime(runtime: MemberRuntime): void {
    this.options.logger.info({ cluster: runtime.name }, 'member cluster runtime stopping');
    const stop = runtime
      .stop()
      .catch((error: unknown) => this.options.logger.warn({ cluster: runtime.name, err: error }, 'member cluster runtime did not stop cleanly'))
      .finally(() => this.stopping.delete(stop));
    this.stopping.add(stop);
  }

  private async drain(): Promise<void> {
    while (this.stopping.size > 0) await Promise.all(this.stopping);
  }
}
