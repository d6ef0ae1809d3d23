import { type CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { Gauge, type Registry } from 'prom-client';
import { ConflictError, NotFoundError } from '../errors.js';
import { translateKubeError } from '../kube/errors.js';
import { type Clock, sleep, systemClock, type TimerHandle } from '../util/clock.js';

export interface LeaderElectorOptions {
  coordination: CoordinationV1Api;
  namespace: string;
  /** Lease name; also the `name` label of the `rollplane_leader` gauge. */
  name: string;
  /** Unique per replica (e.g. hostname + random suffix). */
  identity: string;
  /** How long a lease is valid after its last observed renewal (ROLLPLANE_LEASE_DURATION_MS). */
  leaseDurationMs: number;
  /** The leader gives up if it has not renewed within this long. Must be < leaseDuration. */
  renewDeadlineMs: number;
  /** Time between acquire / renew attempts. */
  retryPeriodMs: number;
  /** Called when this replica becomes leader; `signal` aborts the moment leadership is lost or released. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called when leadership ends (lost, or released on shutdown); workers must be stopped by now. */
  onStoppedLeading?(): void | Promise<void>;
  /** Called whenever the observed holder changes (including to this replica). */
  onNewLeader?(identity: string): void;
  clock?: Clock;
  registry?: Registry;
  /** Randomises retry waits by up to this factor (client-go's JitterFactor 1.2); default 1.2, 0 for none. */
  jitter?: number;
  onError?(error: unknown): void;
  /**
   * Called after every acquire / renew attempt, failed ones included: when it was sent (this elector's clock) and
   * whether this replica held the lease afterwards. Lets an observer tell that the elector has looked at the lease
   * since some moment, rather than guess it from elapsed time.
   */
  onAttempt?(attempt: { startedAt: number; acquired: boolean }): void;
  /**
   * Asked before every acquire / renew attempt: false (or a failure) skips the attempt, as a failed one. A replica that
   * cannot do a leader's work (its database is unreachable while the Kubernetes API is not) then neither takes the
   * lease nor keeps it: it steps down at the renew deadline and another replica takes over when the lease expires.
   * Default: always able.
   */
  canLead?(): boolean | Promise<boolean>;
}

interface LeaderRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: string;
  renewTime: string;
  leaseTransitions: number;
}

const gauges = new WeakMap<Registry, Gauge<'name'>>();

function leaderGauge(registry: Registry): Gauge<'name'> {
  let g = gauges.get(registry);
  if (!g) {
    g = new Gauge({ name: 'rollplane_leader', help: '1 while this replica holds the named leader lease, else 0', labelNames: ['name'], registers: [registry] });
    gauges.set(registry, g);
  }
  return g;
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection:
 * - a replica takes the lease when it is unheld (empty holder) or when the record has not changed for a full lease
 *   duration as measured on the replica's OWN clock since it last saw a change (never by comparing the lease's
 *   timestamps with the local clock, so clock skew between replicas cannot make two leaders);
 * - every write carries the resourceVersion read just before, so of two replicas racing for the lease one gets 409;
 * - the leader renews every retryPeriod and steps down — aborting the signal given to onStartedLeading — as soon as
 *   it sees another holder or has not renewed for renewDeadline (a local timer, so a hung API call cannot keep it
 *   leading); since renewDeadline < leaseDuration it has stopped before anyone else may take over;
 * - `stop()` releases the lease (empty holder, leaseDurationSeconds 1) after stopping the workers, so another replica
 *   takes over at its next retry instead of after expiry.
 * After losing the lease the elector keeps trying to acquire it again until stopped.
 */
export class LeaderElector {
  readonly identity: string;
  readonly name: string;
  readonly namespace: string;
  private readonly api: CoordinationV1Api;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly jitter: number;
  private readonly options: LeaderElectorOptions;
  private readonly gauge: Gauge<'name'> | undefined;

  private observed: LeaderRecord | undefined;
  private observedRaw: string | undefined;
  /** Local clock time at which `observed` last changed. */
  private observedAt = 0;
  private leading: { abort: AbortController; deadline: TimerHandle | undefined; lastRenew: number } | undefined;
  private stopController: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private reportedLeader: string | undefined;
  /** Local time at which the last acquire/renew attempt was SENT: the renew deadline counts from there. */
  private attemptStartedAt = 0;

  constructor(options: LeaderElectorOptions) {
    this.options = options;
    this.api = options.coordination;
    this.identity = options.identity;
    this.name = options.name;
    this.namespace = options.namespace;
    this.leaseDurationMs = options.leaseDurationMs;
    this.renewDeadlineMs = options.renewDeadlineMs;
    this.retryPeriodMs = options.retryPeriodMs;
    if (!(this.leaseDurationMs > this.renewDeadlineMs && this.renewDeadlineMs > this.retryPeriodMs)) {
      throw new RangeError('leader election needs leaseDuration > renewDeadline > retryPeriod');
    }
    this.clock = options.clock ?? systemClock;
    this.jitter = options.jitter ?? 1.2;
    this.gauge = options.registry ? leaderGauge(options.registry) : undefined;
    this.gauge?.set({ name: this.name }, 0);
  }

  isLeader(): boolean {
    return this.leading !== undefined;
  }

  /**
   * Whether this replica holds the lease by its own clock right now: leading, and its last renewal was sent less than
   * the renew deadline ago. Unlike isLeader(), it is false the moment the deadline passes, even while the timer that
   * steps down has not fired yet (a process resumed after SIGSTOP runs other callbacks before that timer): a fence for
   * writes only the holder may make (src/clusters/ShardLeases.ts).
   */
  holdsFreshly(): boolean {
    return this.leading !== undefined && this.clock.now() < this.leading.lastRenew + this.renewDeadlineMs;
  }

  /** The holder this replica last observed ('' when unheld). */
  observedLeader(): string | undefined {
    return this.observed?.holderIdentity;
  }

  /** Starts campaigning in the background. */
  start(): void {
    if (this.loop) return;
    const stop = new AbortController();
    this.stopController = stop;
    this.loop = this.run(stop.signal);
  }

  /** Stops campaigning; if leading, stops the workers (onStoppedLeading) and then releases the lease. */
  async stop(): Promise<void> {
    const stop = this.stopController;
    if (!stop) return;
    this.stopController = undefined;
    stop.abort(new Error('leader elector stopping'));
    await this.loop;
    this.loop = undefined;
    if (this.leading) {
      await this.stepDown();
      await this.release();
    }
  }

  private async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      let ok = false;
      try {
        ok = await this.attempt();
      } catch (error) {
        this.options.onError?.(error);
      }
      this.options.onAttempt?.({ startedAt: this.attemptStartedAt, acquired: ok });
      if (stop.aborted) break;
      if (ok) {
        if (!this.leading) this.becomeLeader();
        else this.renewed();
      } else if (this.leading && this.observed && this.observed.holderIdentity !== this.identity) {
        // Someone else holds the lease: stop at once rather than wait for the renew deadline.
        await this.stepDown();
      }
      const wait = this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + Math.random() * this.jitter);
      await sleep(this.clock, wait, stop).catch(() => {});
    }
  }

  private becomeLeader(): void {
    const abort = new AbortController();
    this.leading = { abort, deadline: undefined, lastRenew: this.attemptStartedAt };
    this.armDeadline();
    this.gauge?.set({ name: this.name }, 1);
    void Promise.resolve()
      .then(() => {
        // Leadership may already be over (stop() or a lost renew in between): never start workers late.
        if (!abort.signal.aborted) return this.options.onStartedLeading(abort.signal);
      })
      .catch((error) => this.options.onError?.(error));
  }

  private renewed(): void {
    if (!this.leading) return;
    this.leading.lastRenew = this.attemptStartedAt;
    this.armDeadline();
  }

  private armDeadline(): void {
    const l = this.leading;
    if (!l) return;
    if (l.deadline) this.clock.clearTimeout(l.deadline);
    l.deadline = this.clock.setTimeout(
      () => {
        if (this.leading === l) void this.stepDown();
      },
      Math.max(0, l.lastRenew + this.renewDeadlineMs - this.clock.now()),
    );
  }

  private async stepDown(): Promise<void> {
    const l = this.leading;
    if (!l) return;
    this.leading = undefined;
    if (l.deadline) this.clock.clearTimeout(l.deadline);
    this.gauge?.set({ name: this.name }, 0);
    l.abort.abort(new Error(`lost leader lease ${this.namespace}/${this.name}`));
    try {
      await this.options.onStoppedLeading?.();
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  /** Gives the lease up so the next replica need not wait for expiry. Only if we still hold it. */
  private async release(): Promise<void> {
    try {
      const lease = await this.get();
      if (!lease || lease.spec?.holderIdentity !== this.identity) return;
      const now = new V1MicroTime(this.clock.wallNow());
      lease.spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now };
      await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: lease });
    } catch (error) {
      this.options.onError?.(translateKubeError(error, `release lease ${this.namespace}/${this.name}`));
    }
  }

  private async get(): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (error) {
      const e = translateKubeError(error, `read lease ${this.namespace}/${this.name}`);
      if (e instanceof NotFoundError) return undefined;
      throw e;
    }
  }

  /** tryAcquireOrRenew, unless this replica cannot lead right now (canLead): then a failed attempt. */
  private async attempt(): Promise<boolean> {
    this.attemptStartedAt = this.clock.now();
    if (this.options.canLead && !(await this.options.canLead())) return false;
    return this.tryAcquireOrRenew();
  }

  /** One attempt (client-go tryAcquireOrRenew): true when this replica holds the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    this.attemptStartedAt = now;
    const wallNow = new V1MicroTime(this.clock.wallNow());
    const mine = (acquireTime: Date, transitions: number) => ({
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.leaseDurationMs / 1000)),
      acquireTime: new V1MicroTime(acquireTime.getTime()),
      renewTime: wallNow,
      leaseTransitions: transitions,
    });
    const lease = await this.get();
    if (!lease) {
      try {
        const created = await this.api.createNamespacedLease({
          namespace: this.namespace,
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.name, namespace: this.namespace }, spec: mine(wallNow, 0) },
        });
        this.observe(created, now);
        return true;
      } catch (error) {
        const e = translateKubeError(error, `create lease ${this.namespace}/${this.name}`);
        if (e instanceof ConflictError) return false;
        throw e;
      }
    }
    this.observe(lease, now);
    const record = this.observed!;
    const heldByOther = record.holderIdentity !== '' && record.holderIdentity !== this.identity;
    if (heldByOther && this.observedAt + record.leaseDurationSeconds * 1000 > now) return false;
    const isRenewal = record.holderIdentity === this.identity && this.leading !== undefined;
    const spec = isRenewal
      ? mine(new Date(record.acquireTime || wallNow.toISOString()), record.leaseTransitions)
      : mine(wallNow, record.leaseTransitions + (record.holderIdentity === this.identity ? 0 : 1));
    try {
      const updated = await this.api.replaceNamespacedLease({
        name: this.name,
        namespace: this.namespace,
        body: { ...lease, spec: { ...lease.spec, ...spec } },
      });
      this.observe(updated, this.clock.now());
      return true;
    } catch (error) {
      const e = translateKubeError(error, `update lease ${this.namespace}/${this.name}`);
      if (e instanceof ConflictError) return false;
      throw e;
    }
  }

  private observe(lease: V1Lease, now: number): void {
    const s = lease.spec ?? {};
    const record: LeaderRecord = {
      holderIdentity: s.holderIdentity ?? '',
      leaseDurationSeconds: s.leaseDurationSeconds ?? Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: timeString(s.acquireTime),
      renewTime: timeString(s.renewTime),
      leaseTransitions: s.leaseTransitions ?? 0,
    };
    const raw = JSON.stringify(record);
    if (raw !== this.observedRaw) {
      this.observedRaw = raw;
      this.observed = record;
      this.observedAt = now;
    }
    if (record.holderIdentity !== this.reportedLeader) {
      this.reportedLeader = record.holderIdentity;
      if (record.holderIdentity) this.options.onNewLeader?.(record.holderIdentity);
    }
  }
}

function timeString(t: unknown): string {
  if (t instanceof Date) return t.toISOString();
  return typeof t === 'string' ? t : '';
}

/** Something with start/stop, as a Controller. */
export interface Runnable {
  start(): void;
  stop(): Promise<void>;
}

/**
 * The callbacks that make `runnables` (controllers, job workers) run only while leading: started on election,
 * stopped — in-flight work aborted and drained — the moment leadership ends.
 */
export function runWhileLeading(runnables: Runnable[]): Pick<LeaderElectorOptions, 'onStartedLeading' | 'onStoppedLeading'> {
  return {
    onStartedLeading: () => {
      for (const r of runnables) r.start();
    },
    onStoppedLeading: async () => {
      await Promise.all(runnables.map((r) => r.stop()));
    },
  };
}
