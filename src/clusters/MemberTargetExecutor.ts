import type { EventBus } from '../domain/EventBus.js';
import { admittedTarget } from '../domain/engineSteps.js';
import { EventType, type RolloutKind, type StoredEvent } from '../domain/events.js';
import { type AdmittedTarget, type RolloutDriver, targetKey } from '../domain/ports.js';
import type { Rollout, RolloutService, RolloutTarget } from '../domain/RolloutService.js';
import { ACTIVE_ROLLOUT_STATES, isTerminal } from '../domain/rolloutStates.js';
import type { Logger } from '../log.js';

export interface MemberTargetExecutorOptions {
  cluster: string;
  /** The member runtime's drivers, by kind. */
  drivers: ReadonlyMap<RolloutKind, RolloutDriver>;
  rollouts: Pick<RolloutService, 'get' | 'targets' | 'activeRolloutIdsInCluster' | 'list' | 'noteWaiting'>;
  /** The history's bus: on PostgreSQL it carries every replica's events. */
  bus: Pick<EventBus, 'subscribe'>;
  logger: Logger;
  /** How soon a failed write is tried again by this executor itself (default WRITE_RETRY_MS). */
  writeRetryMs?: number;
}

/**
 * A failed write (a prepare, an admission) is tried again this soon, as `local`'s engine passes would: left to the
 * engine's next pass of a member's rollout it waited 15–30 s (attack 21, F4: the settling of a hold write whose answer
 * was lost, retried that slowly, failed targets at a 60 s deadline that `local` met).
 */
const WRITE_RETRY_MS = 5_000;

/** The kind's other active rollouts a driver's finish is told of (as the engine's FINISH_OTHERS). */
const OTHERS = 100;
/** Targets read per page by targetsHere (the API's largest page). */
const TARGET_PAGE = 1000;

/**
 * A member cluster's writes for its targets, made on the replica that holds the member's shard (docs/adr/0059): the
 * engine — one per rollout, on the main leader — admits a target of a member it does not hold by recording it
 * PROGRESSING in the history only; this executor, running while its member's controllers run, makes the write. It
 * reads the PROGRESSING targets of its cluster when it starts (and on each resync), and hears each admission and each
 * rollout's end on the bus; then it runs the rollout's `prepare` in its cluster once, the driver's `admit` for each
 * target (the kinds' writes are idempotent: a target already at its version is left alone), and the driver's
 * `finish` once the rollout is terminal. Where this replica leads too, the routing driver admits through the same
 * executor, which then does not admit the target a second time when the event arrives.
 */
export class MemberTargetExecutor {
  private unsubscribe: (() => void) | undefined;
  private abort = new AbortController();
  private readonly work = new Set<Promise<void>>();
  /** `rolloutId|targetKey` admitted by this executor (or being admitted: the promise). */
  private readonly admitted = new Map<string, Promise<void>>();
  /** `rolloutId` whose prepare ran (or runs) here. */
  private readonly prepared = new Map<string, Promise<void>>();
  /**
   * `rolloutId` whose finish ran (or runs) here: a second caller waits for the same one. The engine's finish came
   * second (after this executor heard the rollout end) and returned at once: the rollout was marked finished while its
   * finish here still waited for the controller's own rolling update, and the sweep of ended rollouts' holds released
   * every pool under the old controller pod (attack 25, F1: all of a member's pools recreated on the failed image).
   */
  private readonly finished = new Map<string, Promise<void>>();
  /** Aborted when the rollout is heard terminal: its prepare and admissions under way stop writing (attack 15, F2). */
  private readonly rolloutAborts = new Map<string, AbortController>();
  /**
   * The last failed write here, until one succeeds: by rollout (its prepare) and by `rollout|target` (the target's own
   * admission): what a waiting target says.
   */
  private readonly writeFailures = new Map<string, string>();

  /** The resync a failed write asked for, pending (one at a time). */
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: MemberTargetExecutorOptions) {}

  get running(): boolean {
    return this.unsubscribe !== undefined;
  }

  /** Starts hearing the bus, then admits what the history says is in flight in its cluster. */
  start(): void {
    if (this.unsubscribe) return;
    this.abort = new AbortController();
    this.unsubscribe = this.options.bus.subscribe((event) => this.heard(event));
    this.resync();
  }

  /** Stops hearing, aborts what runs and waits for it (the shard is being given up: no write may follow). */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.abort.abort(new Error(`member cluster ${this.options.cluster}: this replica no longer drives it`));
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    this.admitted.clear();
    this.prepared.clear();
    this.finished.clear();
    this.rolloutAborts.clear();
  }

  /** Admits every PROGRESSING target of its cluster in the active rollouts (level-based: a missed event is caught here). */
  resync(): void {
    if (!this.running) return;
    this.track(async () => {
      for (const id of await this.options.rollouts.activeRolloutIdsInCluster(this.options.cluster)) {
        if (!this.running) return;
        await this.admitInFlight(id);
      }
    });
  }

  /** Prepare (once per rollout) and admit, unless this executor admitted the target already. */
  admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    const key = admissionKey(rollout.id, target);
    const known = this.admitted.get(key);
    if (known) return known;
    const driver = this.options.drivers.get(rollout.kind);
    if (!driver) return Promise.resolve();
    const both = this.signalFor(rollout.id, signal);
    const run = this.prepareOnce(rollout, both).then(() => {
      // A rollout that ended while its prepare ran (waiting for the controller's own rollout, say) admits nothing more.
      both.throwIfAborted();
      return driver.admit(target, rollout, both);
    });
    this.admitted.set(key, run);
    // A failed admission is tried again (by the engine's next pass here, or the next resync).
    run.then(
      () => this.wrote(key, rollout.id, target),
      (error: unknown) => {
        this.admitted.delete(key);
        // A prepare that failed is the rollout's (noted by prepareOnce); else the target's own admission failed.
        if (this.prepared.has(rollout.id)) this.noteFailure(key, error, both, rollout.id, target);
        this.retrySoon(both);
      },
    );
    return run;
  }

  /** The rollout's prepare in this cluster, once. */
  prepare(rollout: Rollout, signal: AbortSignal): Promise<void> {
    return this.prepareOnce(rollout, this.signalFor(rollout.id, signal));
  }

  /** The caller's signal, this executor's (stopped) and the rollout's (ended here): any of them aborts the rollout's writes. */
  private signalFor(rolloutId: string, signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, this.abort.signal, this.rolloutSignal(rolloutId)]);
  }

  /** prepare, with the signal already combined (admit's). */
  private prepareOnce(rollout: Rollout, signal: AbortSignal): Promise<void> {
    const known = this.prepared.get(rollout.id);
    if (known) return known;
    const driver = this.options.drivers.get(rollout.kind);
    const run = Promise.resolve(driver?.prepare?.(rollout, signal));
    this.prepared.set(rollout.id, run);
    run.then(
      () => this.wrote(rollout.id, rollout.id),
      (error: unknown) => {
        this.prepared.delete(rollout.id);
        this.noteFailure(rollout.id, error, signal, rollout.id);
        this.retrySoon(signal);
      },
    );
    return run;
  }

  /** The rollout's finish in this cluster, once. */
  async finish(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    const known = this.finished.get(rollout.id);
    if (known) return known;
    const run = (async () => {
      await this.options.drivers.get(rollout.kind)?.finish?.(rollout, AbortSignal.any([signal, this.abort.signal]), others);
      this.forget(rollout.id);
    })();
    this.finished.set(rollout.id, run);
    run.catch(() => {
      if (this.finished.get(rollout.id) === run) this.finished.delete(rollout.id);
    });
    return run;
  }

  private heard(event: StoredEvent): void {
    if (!event.rolloutId) return;
    const rolloutId = event.rolloutId;
    if (event.type === EventType.TargetStateChanged && event.cluster === this.options.cluster) {
      // Admitted: write it. Done (a rollout may end before its last targets do): the rollout's finish, once it is over.
      if (event.payload.to === 'PROGRESSING') this.track(() => this.admitInFlight(rolloutId, `${event.namespace}/${event.name}`));
      else this.track(() => this.finishHere(rolloutId));
    } else if (event.type === EventType.RolloutStateChanged && isTerminal(event.payload.to as Rollout['state'])) {
      this.rolloutAborts.get(rolloutId)?.abort(new Error(`rollout ${rolloutId} is ${String(event.payload.to)}: no more writes for it`));
      this.track(() => this.finishHere(rolloutId));
    }
  }

  /** Admits the rollout's PROGRESSING targets in its cluster (only `only`, namespace/name, when given). */
  private async admitInFlight(rolloutId: string, only?: string): Promise<void> {
    const rollout = await this.options.rollouts.get(rolloutId);
    if (!rollout || !ACTIVE_ROLLOUT_STATES.includes(rollout.state)) return;
    const targets = (await this.targetsHere(rolloutId, 'PROGRESSING')).filter((t) => only === undefined || `${t.namespace}/${t.name}` === only);
    for (const target of targets) {
      if (!this.running) return;
      await this.admit(admittedTarget(rollout, target, Date.now()), rollout, this.abort.signal);
    }
  }

  /** The rollout ended: its finish here, if it had targets in this cluster and none of them is still in flight. */
  private async finishHere(rolloutId: string): Promise<void> {
    const rollout = await this.options.rollouts.get(rolloutId);
    if (!rollout || !isTerminal(rollout.state)) return;
    const mine = await this.targetsHere(rolloutId);
    if (mine.length === 0 || mine.some((t) => t.state === 'PROGRESSING')) return;
    // Only the active rollouts with targets in this cluster: another cluster's never need this one's controller.
    const others = (
      await this.options.rollouts.list({ kind: rollout.kind, states: [...ACTIVE_ROLLOUT_STATES], clusters: [this.options.cluster] }, OTHERS, undefined)
    ).items.filter((other) => other.id !== rollout.id);
    await this.finish(rollout, this.abort.signal, others);
  }

  /**
   * The rollout's targets in this cluster (in `state`), read by the store in pages: each member's executor hears every
   * admission of its cluster, and reading the whole rollout each time was most of the service's CPU over 300 clusters
   * (900 targets parsed per admission, 300 executors: 4× the CPU of the same pools in one cluster).
   */
  private async targetsHere(rolloutId: string, state?: RolloutTarget['state']): Promise<RolloutTarget[]> {
    const found: RolloutTarget[] = [];
    for (let after: string | undefined; ; ) {
      const page = await this.options.rollouts.targets(rolloutId, state, TARGET_PAGE, after, { clusters: [this.options.cluster] });
      found.push(...page.items);
      if (!page.hasNextPage || page.endCursor === null) return found;
      after = page.endCursor;
    }
  }

  private rolloutSignal(rolloutId: string): AbortSignal {
    let controller = this.rolloutAborts.get(rolloutId);
    if (!controller) {
      controller = new AbortController();
      this.rolloutAborts.set(rolloutId, controller);
    }
    return controller.signal;
  }

  /**
   * Why this executor's last write for the rollout here failed, while no later one succeeded (attack 16, G1: targets
   * waiting on a member whose writes were never answered failed at their deadline saying only what they waited for).
   * Known on the replica that writes to the member (the shard holder) only.
   */
  lastWriteFailure(rolloutId: string, target: Pick<AdmittedTarget, 'namespace' | 'name'>): string | undefined {
    return this.writeFailures.get(rolloutId) ?? this.writeFailures.get(admissionKey(rolloutId, target));
  }

  /**
   * A write failed: kept for the observation (lastWriteFailure) and noted on the waiting targets' rows (all of the
   * rollout's here for its prepare, else the one target), so every replica and `rollout status` say why they wait.
   */
  private noteFailure(key: string, error: unknown, signal: AbortSignal, rolloutId: string, target?: AdmittedTarget): void {
    // An abort because the rollout ended or this executor stopped is no failure of the member's.
    if (signal.aborted && !(signal.reason instanceof Error && signal.reason.name === 'TimeoutError')) return;
    const message = error instanceof Error ? error.message : String(error);
    const failure = `${new Date().toISOString()}: ${message.slice(0, 300)}`;
    this.writeFailures.set(key, failure);
    this.noteWaiting(rolloutId, target, `waiting: rollplane's last write here failed at ${failure}`);
  }

  /** A resync soon, unless the write's own signal says it is not to be tried again (the rollout ended, the shard went). */
  private retrySoon(signal: AbortSignal): void {
    const ended = signal.aborted && !(signal.reason instanceof Error && signal.reason.name === 'TimeoutError');
    if (this.retryTimer || !this.running || ended) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.resync();
    }, this.options.writeRetryMs ?? WRITE_RETRY_MS);
    this.retryTimer.unref();
  }

  /** A write went through: a failure noted before is cleared from the waiting targets' rows. */
  private wrote(key: string, rolloutId: string, target?: AdmittedTarget): void {
    if (this.writeFailures.delete(key)) this.noteWaiting(rolloutId, target, null);
  }

  private noteWaiting(rolloutId: string, target: AdmittedTarget | undefined, error: string | null): void {
    const where = target ? { namespace: target.namespace, name: target.name } : undefined;
    this.track(() => this.options.rollouts.noteWaiting(rolloutId, this.options.cluster, where, error));
  }

  private forget(rolloutId: string): void {
    const prefix = admissionKey(rolloutId);
    for (const key of this.writeFailures.keys()) if (key === rolloutId || key.startsWith(prefix)) this.writeFailures.delete(key);
    this.rolloutAborts.delete(rolloutId);
    for (const key of this.admitted.keys()) if (key.startsWith(prefix)) this.admitted.delete(key);
    this.prepared.delete(rolloutId);
  }

  private track(task: () => Promise<void>): void {
    const run: Promise<void> = task()
      .catch((error: unknown) => {
        if (!this.abort.signal.aborted)
          this.options.logger.warn({ cluster: this.options.cluster, err: error }, 'member target write failed; retried at the next resync');
      })
      .finally(() => this.work.delete(run));
    this.work.add(run);
  }
}

/**
 * A target's key among a rollout's admissions and write failures (`rolloutId|namespace/name`); without a target, the
 * prefix every one of the rollout's keys starts with. A rollout's own failures (its prepare's) are keyed by its id.
 */
function admissionKey(rolloutId: string, target?: Pick<AdmittedTarget, 'namespace' | 'name'>): string {
  return `${rolloutId}|${target ? targetKey(target) : ''}`;
}
