import { admissionLimit, resolveMaxUnavailable } from './kinds/strategy.js';
import { clusterField, clusterOf, type AdmittedTarget, type RolloutDriver, type TargetObservation } from './ports.js';
import type { Rollout, RolloutTarget, TargetChange } from './RolloutService.js';
import { isTerminal, type RolloutState } from './rolloutStates.js';
import type { RolloutView } from './RolloutView.js';

/**
 * The steps of one engine pass over a rollout (RolloutEngine.reconcile): halt, prepare, observe, decide, admit, roll
 * back, finish. Each looks at the pass — the rollout, its view, the clock — and returns a decision; the engine's loop
 * applies it (writes the store and the cluster) and runs the next step, or ends the pass. Steps write nothing: the
 * only calls they make are the driver's reading ones (haltReason, observe, unavailableOutsideRollout, which read
 * informer caches), so each can be tested with a table of passes and a fake driver (ADR 0040). Argo Rollouts splits
 * its controller the same way: canary.go decides, sync.go persists.
 */

/** Up to this many PROGRESSING targets, every pass observes them all (cheap, and needs no notifications). */
export const FULL_OBSERVATION_BELOW = 256;

/** What a pass starts from, before the rollout's view is read (halt and prepare need no view). */
export interface Arrival {
  /** The rollout as last read or written in this pass. */
  rollout: Rollout;
  /** Steps call only its reading methods (haltReason, observe, unavailableOutsideRollout). */
  readonly driver: RolloutDriver;
}

/** One pass over a rollout, once its view is read. The engine's loop updates it as it applies decisions. */
export interface Pass extends Arrival {
  readonly view: RolloutView;
  readonly now: () => number;
  /** EngineOptions.fullObservationMs. */
  readonly fullObservationMs: number;
  /** The earliest progress deadline of a target still in flight after this pass (Infinity: none). */
  nextDeadline: number;
  /** How many targets `decide` lets this pass admit at most (undefined: admit none). */
  admissionCap?: number;
  /** A target's progress deadline in seconds (a staged rollout's wave may set its own); undefined: the strategy's. */
  deadlineSecondsOf?: (target: RolloutTarget) => number;
  /** A staged rollout's pass admits only targets of these clusters (engineStage.ts); undefined: any. */
  admitClusters?: ReadonlySet<string>;
  /**
   * Told at once of each admitted target `observe` finds still progressing, so that a change of its object during the
   * rest of the pass already reaches this rollout (the engine's routing index; in memory, nothing is written).
   */
  readonly stillProgressing: (target: RolloutTarget) => void;
}

export type Decision =
  /** Nothing to change; go on with the next step. */
  | { readonly do: 'nothing' }
  /** Move the rollout to another state (losing gracefully to a concurrent user action), then go on. */
  | { readonly do: 'transition'; readonly to: RolloutState; readonly message: string | null }
  /** Run the driver's prepare, then start the rollout (PROGRESSING). */
  | { readonly do: 'start' }
  /** Record what became of admitted targets; the pass ends when the rollout changed state meanwhile. */
  | { readonly do: 'record'; readonly outcomes: Observed }
  /** Pause at the end of the canary phase; the pass ends. */
  | { readonly do: 'pause at canary'; readonly message: string }
  /** The rollout may admit up to `cap` targets (after noting, when `passCanary`, that its canary phase is over). */
  | { readonly do: 'proceed'; readonly cap: number; readonly passCanary: boolean }
  /** Every target is done: the rollout SUCCEEDED (after noting, when `passCanary`, that its canary phase is over). */
  | { readonly do: 'succeed'; readonly message: string | null; readonly passCanary: boolean }
  /** Write the change for these PENDING targets and record them as PROGRESSING. */
  | { readonly do: 'admit'; readonly targets: RolloutTarget[] }
  /** Start the automatic rollback of this FAILED rollout (exactly once, by its idempotency key). */
  | { readonly do: 'roll back' }
  /** Undo what prepare changed, mark the rollout finished, close the rollback it is; the pass ends. */
  | { readonly do: 'finish' }
  /** Nothing in flight and nothing to do until a user acts (a paused rollout); the pass ends without a requeue. */
  | { readonly do: 'rest' }
  /** Nothing admitted: these many targets of its selection, unavailable outside the rollout, took every free slot (0: none did). */
  | { readonly do: 'held back'; readonly down: number };

/** What `observe` found. */
export interface Observed {
  /** Outcomes to record (SUCCEEDED or FAILED targets). */
  readonly changes: TargetChange[];
  /** Every PROGRESSING target was observed, at this time (undefined: only those whose object changed). */
  readonly allObservedAt: number | undefined;
  /** The earliest progress deadline among the targets still progressing (Infinity: none). */
  readonly nextDeadline: number;
}

const NOTHING: Decision = { do: 'nothing' };

/** halt: an active rollout fails when its driver says it cannot go on in the cluster as it is. */
export async function halt(pass: Arrival): Promise<Decision> {
  if (isTerminal(pass.rollout.state)) return NOTHING;
  const reason = await pass.driver.haltReason?.(pass.rollout);
  return reason ? { do: 'transition', to: 'FAILED', message: reason } : NOTHING;
}

/** prepare: a PENDING rollout has its cluster prepared and starts. */
export function prepare(pass: Arrival): Decision {
  return pass.rollout.state === 'PENDING' ? { do: 'start' } : NOTHING;
}

/**
 * observe: what became of the admitted targets (also after pause or abort: admitted targets finish). Every target is
 * observed at least every fullObservationMs (and when the earliest progress deadline is due); in between, only those
 * whose object changed. Taking the view's list of changed targets clears it (a change noticed during the pass is kept
 * for the next one).
 */
export async function observe(pass: Pass): Promise<Decision> {
  const { view, rollout } = pass;
  const now = pass.now();
  const all = view.count('PROGRESSING') < FULL_OBSERVATION_BELOW || now - view.lastFullObservation >= pass.fullObservationMs || now >= view.earliestDeadline;
  const deadlineMsOf = (target: RolloutTarget) => (pass.deadlineSecondsOf?.(target) ?? rollout.strategy.progressDeadlineSeconds) * 1000;
  const changes: TargetChange[] = [];
  let nextDeadline = Infinity;
  for (const target of view.toObserve(all)) {
    const admitted = admittedTarget(rollout, target, pass.now());
    const deadlineMs = deadlineMsOf(target);
    let observation: TargetObservation;
    try {
      observation = await pass.driver.observe(admitted, rollout);
    } catch (error) {
      observation = { phase: 'progressing', message: `cannot observe: ${(error as Error).message}` };
    }
    const change = outcomeOf(target, judged(observation, pass.now() - admitted.admittedAt.getTime(), deadlineMs), pass.now());
    if (change) changes.push(change);
    else {
      pass.stillProgressing(target);
      nextDeadline = Math.min(nextDeadline, admitted.admittedAt.getTime() + deadlineMs);
    }
  }
  return { do: 'record', outcomes: { changes, allObservedAt: all ? now : undefined, nextDeadline } };
}

/** An observation with the progress deadline applied: a target still progressing after it has failed. */
export function judged(observation: TargetObservation, elapsedMs: number, deadlineMs: number): TargetObservation {
  if (observation.phase !== 'progressing' || elapsedMs < deadlineMs) return observation;
  const seconds = Math.round(deadlineMs / 1000);
  return {
    phase: 'failed',
    reason: `not converged within the progress deadline of ${seconds}s${observation.message ? `: ${observation.message}` : ''}`,
  };
}

function outcomeOf(target: RolloutTarget, observation: TargetObservation, at: number): TargetChange | undefined {
  if (observation.phase === 'succeeded') return { target, to: 'SUCCEEDED', error: null, at: new Date(at) };
  if (observation.phase === 'failed') return { target, to: 'FAILED', error: observation.reason, at: new Date(at) };
  if (observation.phase === 'untouched') return { target, to: 'CANCELLED', error: observation.reason, at: new Date(at) };
  return undefined;
}

/**
 * decide: the outcome of the rollout as a whole. It fails at its failure threshold, pauses at the end of its canary
 * phase, succeeds once no target is pending or in flight, and otherwise may admit up to a cap (the canary's rest, or
 * no cap).
 */
export function decide(pass: Pass): Decision {
  const { rollout, view } = pass;
  const failed = view.count('FAILED');
  const progressing = view.count('PROGRESSING');
  const pending = view.count('PENDING');
  const threshold = rollout.strategy.failureThreshold;
  if (!isTerminal(rollout.state) && threshold > 0 && failed >= threshold) {
    const firstError = view.firstInState('FAILED')?.error ?? 'unknown error';
    return { do: 'transition', to: 'FAILED', message: `${failed} target(s) failed (failure threshold ${threshold}); first: ${firstError}` };
  }
  if (rollout.state !== 'PROGRESSING') return NOTHING;
  const canary = rollout.strategy.canary;
  let cap = Infinity;
  // Paused at the end of the canary phase, and PROGRESSING again: a user resumed it.
  let passCanary = false;
  if (canary !== undefined && canary > 0 && !rollout.engineState.canaryPassed) {
    if (rollout.engineState.canaryPaused) passCanary = true;
    else {
      const admittedSoFar = view.admittedSoFar();
      if (admittedSoFar >= canary && progressing === 0 && pending > 0) {
        return { do: 'pause at canary', message: `canary: ${view.count('SUCCEEDED')} of the first ${canary} target(s) upgraded; resume to continue` };
      }
      cap = Math.max(0, canary - admittedSoFar);
    }
  }
  if (pending === 0 && progressing === 0) {
    return { do: 'succeed', passCanary, message: failed > 0 ? `${failed} target(s) failed, below the failure threshold of ${threshold}` : null };
  }
  return { do: 'proceed', cap, passCanary };
}

/**
 * admit: the PENDING targets this pass changes, in plan order — as many as the strategy allows beside the targets in
 * flight and those of the selection unavailable outside the rollout (asked of the cluster only when there is
 * something to admit), within the cap `decide` set.
 */
export async function admit(pass: Pass): Promise<Decision> {
  const { rollout, view } = pass;
  if (pass.admissionCap === undefined) return NOTHING;
  const limit = admissionLimit(rollout.strategy, view.changing());
  const deferred = pass.driver.deferAdmission?.bind(pass.driver);
  const nowhere = inFlightNowhere(view, deferred);
  let budget = Math.min(pass.admissionCap, limit - view.count('PROGRESSING') + nowhere);
  let down = 0;
  if (budget > 0 && view.count('PENDING') > 0) down = (await pass.driver.unavailableOutsideRollout?.(rollout, view.changingKeys)) ?? 0;
  const free = budget;
  budget -= down;
  // The slots of targets stuck in dead members are lent to the healthy clusters only: a dead member's own targets are
  // admitted within the budget that counts them, or a member black-holed under maxUnavailable 1 had all its targets
  // admitted one after another, and recreated at once when it came back (attack 17, M1).
  const deferredBudget = budget - nowhere;
  const perCluster = perClusterSlots(rollout.strategy, view);
  // A staged rollout's wave, or the clusters inside their maintenance windows: only their targets (ADR 0065).
  const allowed = pass.admitClusters;
  const take = allowed ? (target: RolloutTarget) => allowed.has(clusterOf(target)) && (!perCluster || perCluster(target)) : perCluster;
  const targets = budget > 0 ? view.nextPending(budget, { ...(deferred ? { deferred, deferredLimit: deferredBudget } : {}), ...(take ? { take } : {}) }) : [];
  if (targets.length > 0) return { do: 'admit', targets };
  // Noted for waitingFor only when they alone held it back (free slots, all taken by them; a count still being read is
  // not a figure), and the note cleared once anything else is why nothing is admitted.
  const heldBackBy = free > 0 && budget <= 0 && Number.isFinite(down) ? down : 0;
  return heldBackBy !== (rollout.engineState.downOutside ?? 0) ? { do: 'held back', down: heldBackBy } : NOTHING;
}

/**
 * Targets in flight in member clusters nobody drives now (deferAdmission): they hold no slot of the rollout-wide limit,
 * or a member that went away mid-rollout would keep its admitted targets' slots until their deadline and slow every
 * other cluster (the benchmark's black-holed run: 5.2× the healthy one). They can neither progress nor be observed;
 * the per-cluster limit still bounds them, and when their member is back they count again.
 */
function inFlightNowhere(view: RolloutView, deferred: ((target: Pick<RolloutTarget, 'cluster'>) => boolean) | undefined): number {
  if (!deferred) return 0;
  let count = 0;
  // Asked per cluster, not per target: this runs on every admission pass of every rollout, local-only ones too.
  for (const [cluster, { progressing }] of view.byCluster()) if (progressing > 0 && deferred({ cluster })) count += progressing;
  return count;
}

/**
 * The per-cluster limit (`maxUnavailablePerMemberCluster`, issue 29): each cluster's targets in flight stay within it, as
 * maxUnavailable read against that cluster's own changing targets; undefined when the strategy sets none.
 */
function perClusterSlots(strategy: Rollout['strategy'], view: RolloutView): ((target: RolloutTarget) => boolean) | undefined {
  if (strategy.maxUnavailablePerMemberCluster === undefined) return undefined;
  const free = new Map<string, number>();
  for (const [cluster, counts] of view.byCluster()) {
    free.set(
      cluster,
      resolveMaxUnavailable(strategy.maxUnavailablePerMemberCluster, counts.changing, 'strategy.maxUnavailablePerMemberCluster') - counts.progressing,
    );
  }
  return (target) => {
    const cluster = clusterOf(target);
    const left = free.get(cluster) ?? 0;
    if (left <= 0) return false;
    free.set(cluster, left - 1);
    return true;
  };
}

/**
 * roll back: a FAILED rollout that asks for it is rolled back. Level-based, so a crash between FAILED and the
 * rollback's creation still rolls back; the rollback's idempotency key makes it start exactly once.
 */
export function rollBack(pass: Pass): Decision {
  const { rollout } = pass;
  // A staged run's failure policy decides for itself (rollBackRun); otherwise the kind's strategy does.
  const wanted = rollout.engineState.rollBackRun ?? rollout.strategy.autoRollback;
  return rollout.state === 'FAILED' && wanted && !rollout.engineState.finished ? { do: 'roll back' } : NOTHING;
}

/** finish: once the rollout ended and no admitted target is left in flight, finish it; a paused one rests. */
export function finish(pass: Pass): Decision {
  const { rollout, view } = pass;
  const inFlight = view.count('PROGRESSING');
  if (isTerminal(rollout.state) && inFlight === 0 && !rollout.engineState.finished) return { do: 'finish' };
  if (rollout.state === 'PAUSED' && inFlight === 0) return { do: 'rest' };
  return NOTHING;
}

/** When the pass asks to run again: at the next progress deadline, and at least every pollMs. */
export function requeueAfterMs(nextDeadline: number, now: number, pollMs: number): number {
  const untilDeadline = Number.isFinite(nextDeadline) ? Math.max(10, nextDeadline - now) : pollMs;
  return Math.min(pollMs, untilDeadline);
}

/** The target as its driver sees it once admitted (a target not admitted yet is admitted `now`). */
export function admittedTarget(rollout: Rollout, target: RolloutTarget, now: number): AdmittedTarget {
  return {
    rolloutId: rollout.id,
    kind: rollout.kind,
    ...clusterField(target.cluster),
    namespace: target.namespace,
    name: target.name,
    ordinal: target.ordinal,
    fromVersion: target.fromVersion,
    toVersion: target.toVersion,
    admittedAt: target.admittedAt ?? new Date(now),
  };
}
