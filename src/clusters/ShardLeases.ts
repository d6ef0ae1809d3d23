import { createHash } from 'node:crypto';
import { type CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { Gauge, type Registry } from 'prom-client';
import { LeaderElector } from '../controller/LeaderElector.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { translateKubeError } from '../kube/errors.js';
import type { Logger } from '../log.js';
import { type Clock, sleep, systemClock } from '../util/clock.js';

/** The label that marks a replica's presence Lease, valued with the leader election name (several rollplanes may share a namespace). */
export const PRESENCE_LABEL = 'rollplane.io/shard-presence';

/** The shard of a member cluster: a stable hash of its name (FNV-1a, 32 bits) modulo the number of shards. */
export function shardOf(cluster: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(cluster, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** The Lease of shard `n` (`<leaderElection.name>-shard-<n>`). */
export function shardLeaseName(name: string, shard: number): string {
  return `${name}-shard-${shard}`;
}

export interface ShardLeasesOptions {
  /** `local`'s Lease API (the management cluster's). */
  coordination: CoordinationV1Api;
  /** The leader election namespace and name: the shards' Leases are `<name>-shard-<n>` there. */
  namespace: string;
  name: string;
  /** ROLLPLANE_MEMBER_SHARDS. */
  shards: number;
  /** This replica's identity (the main Manager's): the holder written into the Leases. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Whether this replica can do a leader's work (the database guard the main Manager uses); default: always. */
  canLead?: () => boolean | Promise<boolean>;
  /** This replica took shard `n`: its members' controllers may start. */
  onAcquired(shard: number): void;
  /** This replica is losing shard `n`: resolve once its members' controllers have stopped (called before the renew deadline passes). */
  onReleased(shard: number): Promise<void>;
  registry?: Registry;
  logger: Logger;
  clock?: Clock;
}

const gauges = new WeakMap<Registry, Gauge<'shard'>>();

function heldGauge(registry: Registry): Gauge<'shard'> {
  let g = gauges.get(registry);
  if (!g) {
    g = new Gauge({
      name: 'rollplane_shard_held',
      help: "1 while this replica holds the member clusters' shard Lease, else 0",
      labelNames: ['shard'],
      registers: [registry],
    });
    gauges.set(registry, g);
  }
  return g;
}

interface Presence {
  raw: string;
  /** Local clock time at which its record last changed. */
  changedAt: number;
}

/**
 * The member clusters' shards across replicas (docs/adr/0059-shard-leases.md): one coordination.k8s.io Lease per shard,
 * each campaigned for by a LeaderElector of its own (client-go's rules: its holder stops its work before the renew
 * deadline, so before anyone else may take it), and a member cluster belongs to shard `shardOf(name)`.
 *
 * Spread, with Leases only: every replica able to lead renews a presence Lease of its own (labelled
 * `rollplane.io/shard-presence=<name>`) and counts the live ones — those whose record changed within a lease duration
 * by its own clock, as the electors judge a holder. A replica campaigns for a shard only while it holds fewer than
 * ceil(shards / live replicas), and gives back (releases) the shards above that number, highest first, so that a
 * replica that joins gets its part within a retry period or two; a replica that dies stops renewing both its presence
 * and its shards, and the others, their limit raised, take its shards once its Leases expire.
 */
export class ShardLeases {
  private readonly electors: (LeaderElector | undefined)[];
  private readonly held = new Set<number>();
  /** Holds begun per shard: tells a hold's end from a later hold's. */
  private readonly holdCount: number[] = [];
  private readonly clock: Clock;
  private readonly gauge: Gauge<'shard'> | undefined;
  private readonly presenceName: string;
  private readonly presences = new Map<string, Presence>();
  private live = 1;
  private able = false;
  private stopController: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ShardLeasesOptions) {
    this.clock = options.clock ?? systemClock;
    this.electors = Array.from({ length: options.shards }, () => undefined);
    this.gauge = options.registry ? heldGauge(options.registry) : undefined;
    for (let n = 0; n < options.shards; n++) this.gauge?.set({ shard: String(n) }, 0);
    this.presenceName = `${options.name}-replica-${createHash('sha256').update(options.identity).digest('hex').slice(0, 12)}`;
  }

  get shards(): number {
    return this.options.shards;
  }

  /** The shard of a member cluster. */
  shardOf(cluster: string): number {
    return shardOf(cluster, this.options.shards);
  }

  /**
   * Whether this replica holds shard `n` (its elector leads: the controllers of its members may run). False from the
   * moment the hold ends, while its work is still stopping (it still counts toward this replica's limit then).
   */
  holds(shard: number): boolean {
    return this.held.has(shard) && (this.electors[shard]?.isLeader() ?? false);
  }

  /**
   * The write fence: whether this replica holds the shard by its own clock at this instant (the last renewal sent less
   * than the renew deadline ago). A process resumed after SIGSTOP may run a reconcile before its elector's deadline
   * timer fires; this says no already.
   */
  holdsFreshly(shard: number): boolean {
    return this.holds(shard) && (this.electors[shard]?.holdsFreshly() ?? false);
  }

  /** The shards this replica holds, ascending. */
  heldShards(): number[] {
    return [...this.held].sort((a, b) => a - b);
  }

  /** The replicas able to lead that this one sees alive (itself included). */
  liveReplicas(): number {
    return this.live;
  }

  /** The most shards this replica campaigns for: ceil(shards / live replicas). */
  limit(): number {
    return Math.ceil(this.options.shards / Math.max(1, this.live));
  }

  /** Starts: one presence round (so that replicas started together see each other first), then every shard's elector. */
  start(): void {
    if (this.loop) return;
    const stop = new AbortController();
    this.stopController = stop;
    this.loop = (async () => {
      await this.presenceRound();
      for (let n = 0; n < this.options.shards && !stop.signal.aborted; n++) this.startElector(n);
      while (!stop.signal.aborted) {
        await sleep(this.clock, this.options.retryPeriodMs, stop.signal).catch(() => {});
        if (stop.signal.aborted) break;
        await this.presenceRound();
        await this.shedAboveLimit();
      }
    })();
  }

  /** Stops every elector (each stops its members' controllers, then releases its Lease) and removes the presence Lease. */
  async stop(): Promise<void> {
    const stop = this.stopController;
    if (!stop) return;
    this.stopController = undefined;
    stop.abort(new Error('shard leases stopping'));
    await this.loop;
    this.loop = undefined;
    await Promise.all(this.electors.map((elector, n) => this.stopElector(n, elector)));
    await this.deletePresence();
  }

  private startElector(n: number): void {
    const o = this.options;
    const elector = new LeaderElector({
      coordination: o.coordination,
      namespace: o.namespace,
      name: shardLeaseName(o.name, n),
      identity: o.identity,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      retryPeriodMs: o.retryPeriodMs,
      // Keeps a shard it holds while able to lead; takes another only below its limit.
      canLead: () => this.able && (this.held.has(n) || this.held.size < this.limit()),
      onStartedLeading: () => {
        if (this.electors[n] !== elector) return;
        this.holdCount[n] = (this.holdCount[n] ?? 0) + 1;
        this.held.add(n);
        this.gauge?.set({ shard: String(n) }, 1);
        o.logger.info({ shard: n, lease: shardLeaseName(o.name, n) }, 'shard acquired');
        o.onAcquired(n);
      },
      onStoppedLeading: async () => {
        // The elector may take the shard again while this hold's work is still stopping (it keeps campaigning): the end
        // of this hold must not end that next one.
        const hold = this.holdCount[n];
        try {
          await o.onReleased(n);
        } finally {
          if (this.holdCount[n] === hold && !elector.isLeader()) {
            this.held.delete(n);
            this.gauge?.set({ shard: String(n) }, 0);
            o.logger.info({ shard: n, lease: shardLeaseName(o.name, n) }, 'shard released');
          }
        }
      },
      onError: (error) => o.logger.debug({ err: error, shard: n }, 'shard lease error'),
    });
    this.electors[n] = elector;
    elector.start();
  }

  private async stopElector(n: number, elector: LeaderElector | undefined): Promise<void> {
    if (!elector) return;
    if (this.electors[n] === elector) this.electors[n] = undefined;
    await elector.stop();
  }

  /** Gives back the shards above the limit (highest first), each released (not left to expire), then campaigns again. */
  private async shedAboveLimit(): Promise<void> {
    const extra = this.held.size - this.limit();
    if (extra <= 0) return;
    for (const n of this.heldShards().reverse().slice(0, extra)) {
      if (!this.stopController) return;
      this.options.logger.info({ shard: n, live: this.live, limit: this.limit() }, 'shard given back to spread the shards');
      await this.stopElector(n, this.electors[n]);
      if (this.stopController) this.startElector(n);
    }
  }

  /** Renews this replica's presence (while able to lead) and counts the live replicas from every presence Lease. */
  private async presenceRound(): Promise<void> {
    try {
      this.able = this.options.canLead ? await this.options.canLead() : true;
    } catch {
      this.able = false;
    }
    try {
      if (this.able) await this.renewPresence();
      const leases = await this.options.coordination.listNamespacedLease({
        namespace: this.options.namespace,
        labelSelector: `${PRESENCE_LABEL}=${this.options.name}`,
      });
      const now = this.clock.now();
      const seen = new Set<string>();
      let live = 0;
      for (const lease of leases.items) {
        const name = lease.metadata?.name ?? '';
        seen.add(name);
        const raw = JSON.stringify([lease.spec?.holderIdentity, lease.spec?.renewTime]);
        const known = this.presences.get(name);
        if (!known || known.raw !== raw) this.presences.set(name, { raw, changedAt: now });
        const changedAt = this.presences.get(name)!.changedAt;
        const mine = name === this.presenceName;
        if ((mine && this.able) || (!mine && lease.spec?.holderIdentity && now - changedAt < this.options.leaseDurationMs)) live++;
      }
      for (const name of this.presences.keys()) if (!seen.has(name)) this.presences.delete(name);
      this.live = Math.max(1, live);
    } catch (error) {
      // Without a view of the others, keep the last count: the electors' own rules keep the shards safe meanwhile.
      this.options.logger.debug({ err: error }, 'shard presence round failed');
    }
  }

  private async renewPresence(): Promise<void> {
    const { coordination, namespace, identity, leaseDurationMs } = this.options;
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(leaseDurationMs / 1000)),
      renewTime: new V1MicroTime(this.clock.wallNow()),
    };
    let lease: V1Lease | undefined;
    try {
      lease = await coordination.readNamespacedLease({ name: this.presenceName, namespace });
    } catch (error) {
      if (!(translateKubeError(error) instanceof NotFoundError)) throw error;
    }
    try {
      if (!lease) {
        await coordination.createNamespacedLease({
          namespace,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.presenceName, namespace, labels: { [PRESENCE_LABEL]: this.options.name } },
            spec,
          },
        });
      } else {
        await coordination.replaceNamespacedLease({ name: this.presenceName, namespace, body: { ...lease, spec: { ...lease.spec, ...spec } } });
      }
    } catch (error) {
      if (!(translateKubeError(error) instanceof ConflictError)) throw error;
    }
  }

  private async deletePresence(): Promise<void> {
    try {
      await this.options.coordination.deleteNamespacedLease({ name: this.presenceName, namespace: this.options.namespace });
    } catch (error) {
      const e = translateKubeError(error);
      if (!(e instanceof NotFoundError)) this.options.logger.debug({ err: e }, 'could not delete the presence Lease');
    }
  }
}
