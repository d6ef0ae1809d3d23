import { AppError, ConflictError, ErrorCode, isAppError } from '../errors.js';
import type { RolloutKind } from './events.js';
import { admissionLimit, rollbackStrategyOf } from './kinds/strategy.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from './ports.js';
import type { IdempotencyKeyRef } from './historyPort.js';
import { ENGINE_IDEMPOTENCY_SCOPE, type LaunchResult, type RolloutLauncher } from './RolloutLauncher.js';
import { changedByRollout, RollbackPlanStale, type RollbackRules } from './launchRules.js';
import type { Cause, NewTarget, Rollout, RolloutService, RolloutTarget, TargetChange } from './RolloutService.js';
import { targetKey } from './ports.js';
import { ACTIVE_ROLLOUT_STATES, isTerminal } from './rolloutStates.js';
import { RolloutView } from './RolloutView.js';

/** Target changes recorded per transaction. */
const RECORD_BATCH = 500;
/** Up to this many PROGRESSING targets, every pass observes them all (cheap, and needs no notifications). */
const FULL_OBSERVATION_BELOW = 256;

export interface EngineOptions {
  /** How often an active rollout is re-evaluated even without a target change (default 1 s). */
  pollMs?: number;
  /**
   * Large rollouts observe only the targets their driver reported changed, and every PROGRESSING target at most this
   * often (default 5 s), which bounds how late a missed notification is noticed. Rollouts with few targets in flight
   * (FULL_OBSERVATION_BELOW) observe all of them on every pass.
   */
  fullObservationMs?: number;
  /** Admissions written in parallel within one reconcile (default 16). */
  admissionConcurrency?: number;
  now?: () => number;
}

export interface EngineLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What a rollback is asked with (RolloutEngine.rollback). */
export interface RollbackOptions {
  cause?: Cause;
  idempotencyKey?: IdempotencyKeyRef | null;
  rules?: RollbackRules;
}

/** The kind's other active rollouts a driver's finish is told of (RolloutDriver.finish): far more than ever run at once. */
const ACTIVE_ROLLOUTS_PAGE = 500;

/** Plans of a rollback made before giving up while its original keeps admitting targets (RollbackPlanStale). */
const ROLLBACK_PLAN_ATTEMPTS = 3;

/**
 * The rollout engine: decides which targets may change now and records what happens, for every kind alike. It is
 * level-based — `reconcile(rolloutId)` re-reads the rollout, observes its admitted targets through the kind's driver,
 * records outcomes, then admits as many pending targets as the strategy allows — so a restart simply continues.
 * Admission writes the change first and records the target as PROGRESSING after, so a crash in between repeats an
 * idempotent write instead of leaving a target that nobody changed.
 */
export class RolloutEngine {
  private readonly drivers = new Map<RolloutKind, RolloutDriver>();
  /** kind|namespace/name of a PROGRESSING target → its rollout: routes target changes to the right rollout. */
  private readonly progressingTargets = new Map<string, string>();
  /** rollout id → the engine's picture of its targets between passes (see RolloutView). */
  private readonly views = new Map<string, RolloutView>();
  private readonly pollMs: number;
  private readonly fullObservationMs: number;
  private readonly admissionConcurrency: number;
  private readonly now: () => number;
  private enqueueFn: (rolloutId: string, afterMs?: number) => void = () => {};
  private launcher: RolloutLauncher | undefined;

  constructor(
    private readonly rollouts: RolloutService,
    private readonly logger: EngineLogger,
    options: EngineOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 1000;
    this.fullObservationMs = options.fullObservationMs ?? 5000;
    this.admissionConcurrency = options.admissionConcurrency ?? 16;
    this.now = options.now ?? Date.now;
  }

  registerDriver(driver: RolloutDriver): void {
    this.drivers.set(driver.kind, driver);
  }

  hasDriver(kind: RolloutKind): boolean {
    return this.drivers.has(kind);
  }

  /** Wires the engine to the work queue that runs `reconcile` (the composition root does this). */
  connect(enqueue: (rolloutId: string, afterMs?: number) => void, launcher: RolloutLauncher): void {
    this.enqueueFn = enqueue;
    this.launcher = launcher;
  }

  enqueue(rolloutId: string): void {
    this.enqueueFn(rolloutId);
  }

  /** A target changed in the cluster: re-evaluate the rollout that is changing it, if any. */
  targetChanged(kind: RolloutKind, namespace: string, name: string): void {
    const key = targetKey({ namespace, name });
    const rolloutId = this.progressingTargets.get(`${kind}|${key}`);
    if (!rolloutId) return;
    this.views.get(rolloutId)?.markChanged(key);
    this.enqueueFn(rolloutId);
  }

  /** Ids of rollouts the engine still has work for (to enqueue at start-up). */
  async pendingWork(): Promise<string[]> {
    return this.rollouts.idsNeedingEngine();
  }

  /** Drops every cached rollout view (this replica just became leader: another one may have moved rollouts on). */
  forgetViews(): void {
    this.views.clear();
  }

  async reconcile(rolloutId: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    let rollout = await this.rollouts.get(rolloutId);
    if (!rollout) {
      this.views.delete(rolloutId);
      return {};
    }
    const driver = this.drivers.get(rollout.kind);
    if (!driver) {
      throw new AppError(ErrorCode.Unavailable, `no ${rollout.kind} controller runs in this rollplane; rollout ${rolloutId} waits`);
    }
    if (rollout.engineState.finished) {
      this.views.delete(rolloutId);
      return {};
    }

    const halt = isTerminal(rollout.state) ? undefined : await driver.haltReason?.(rollout);
    if (halt) rollout = await this.transition(rollout, 'FAILED', halt);

    if (rollout.state === 'PENDING') {
      await driver.prepare?.(rollout, signal);
      rollout = await this.transition(rollout, 'PROGRESSING', null);
    }

    const view = await this.viewOf(rollout);
    const deadlineMs = rollout.strategy.progressDeadlineSeconds * 1000;
    let nextDeadline = Infinity;

    // 1. Admitted targets: record what became of them (also after pause/abort: admitted targets finish). The outcomes
    //    of one pass are recorded in one transaction. Every target is observed at least every fullObservationMs (and
    //    when the earliest progress deadline is due); in between, only those whose object changed.
    const now = this.now();
    const observeAll =
      view.count('PROGRESSING') < FULL_OBSERVATION_BELOW || now - view.lastFullObservation >= this.fullObservationMs || now >= view.earliestDeadline;
    if (observeAll) {
      view.lastFullObservation = now;
      view.earliestDeadline = Infinity;
    }
    const outcomes: TargetChange[] = [];
    for (const target of view.toObserve(observeAll)) {
      const admitted = this.admitted(rollout, target);
      let observation: TargetObservation;
      try {
        observation = await driver.observe(admitted, rollout);
      } catch (error) {
        observation = { phase: 'progressing', message: `cannot observe: ${(error as Error).message}` };
      }
      const elapsed = this.now() - admitted.admittedAt.getTime();
      if (observation.phase === 'progressing' && elapsed >= deadlineMs) {
        const seconds = Math.round(deadlineMs / 1000);
        observation = {
          phase: 'failed',
          reason: `not converged within the progress deadline of ${seconds}s${observation.message ? `: ${observation.message}` : ''}`,
        };
      }
      if (observation.phase === 'succeeded') {
        outcomes.push({ target, to: 'SUCCEEDED', error: null, at: new Date(this.now()) });
      } else if (observation.phase === 'failed') {
        outcomes.push({ target, to: 'FAILED', error: observation.reason, at: new Date(this.now()) });
      } else {
        this.progressingTargets.set(this.indexKey(rollout.kind, target), rolloutId);
        nextDeadline = Math.min(nextDeadline, admitted.admittedAt.getTime() + deadlineMs);
      }
    }
    if (observeAll) view.earliestDeadline = nextDeadline;
    else nextDeadline = Math.min(nextDeadline, view.earliestDeadline);
    await this.record(rollout, view, outcomes);
    // Only the rollout may have changed under us (a user paused or aborted it): the view is current.
    rollout = (await this.rollouts.get(rolloutId))!;
    if (rollout.state !== view.seenState) {
      // An abort may have cancelled targets too: decide on a fresh view.
      this.views.delete(rolloutId);
      return { requeueAfterMs: 1 };
    }

    const failed = view.count('FAILED');
    const progressing = view.count('PROGRESSING');
    const pending = view.count('PENDING');
    const threshold = rollout.strategy.failureThreshold;

    // 2. Outcome of the rollout as a whole.
    if (!isTerminal(rollout.state) && threshold > 0 && failed >= threshold) {
      const firstError = view.firstInState('FAILED')?.error ?? 'unknown error';
      rollout = await this.transition(rollout, 'FAILED', `${failed} target(s) failed (failure threshold ${threshold}); first: ${firstError}`);
    } else if (rollout.state === 'PROGRESSING') {
      const canary = rollout.strategy.canary;
      let admissionCap = Infinity;
      if (canary !== undefined && canary > 0 && !rollout.engineState.canaryPassed) {
        if (rollout.engineState.canaryPaused) {
          // Paused at the end of the canary phase, and PROGRESSING again: a user resumed it.
          await this.rollouts.updateEngineState(rolloutId, { canaryPassed: true });
        } else {
          const admittedSoFar = view.admittedSoFar();
          if (admittedSoFar >= canary && progressing === 0 && pending > 0) {
            await this.rollouts.updateEngineState(rolloutId, { canaryPaused: true });
            await this.transition(rollout, 'PAUSED', `canary: ${view.count('SUCCEEDED')} of the first ${canary} target(s) upgraded; resume to continue`);
            return {};
          }
          admissionCap = Math.max(0, canary - admittedSoFar);
        }
      }
      const limit = admissionLimit(rollout.strategy, view.changing());
      let budget = Math.min(admissionCap, limit - progressing);
      // Only worth asking the cluster when there is something to admit.
      if (budget > 0 && pending > 0) budget -= (await driver.unavailableOutsideRollout?.(rollout, view.keys)) ?? 0;
      const admitting = budget > 0 ? view.nextPending(budget) : [];
      await this.admit(driver, rollout, view, admitting, signal);
      if (admitting.length > 0) {
        nextDeadline = Math.min(nextDeadline, this.now() + deadlineMs);
        view.earliestDeadline = Math.min(view.earliestDeadline, this.now() + deadlineMs);
      }
      if (pending === 0 && progressing === 0) {
        rollout = await this.transition(rollout, 'SUCCEEDED', failed > 0 ? `${failed} target(s) failed, below the failure threshold of ${threshold}` : null);
      }
    }
    // A transition of ours may have changed targets too (FAILED cancels the PENDING ones): read them afresh next time.
    if (rollout.state !== view.seenState) this.views.delete(rolloutId);

    // Level-based, so a crash between FAILED and the rollback's creation still rolls back: the idempotency key makes
    // the rollback start exactly once however often this runs.
    if (rollout.state === 'FAILED' && rollout.strategy.autoRollback && !rollout.engineState.finished) {
      await this.rollback(rollout.id, {
        cause: { actor: 'rollplane', message: `automatic rollback of ${rollout.id}` },
        // In the engine's own scope: no caller can claim it first (issue 34, finding 5).
        idempotencyKey: { scope: ENGINE_IDEMPOTENCY_SCOPE, key: `auto-rollback:${rollout.id}` },
      }).catch((error: unknown) => {
        if (error instanceof ConflictError) return; // nothing changed, or already rolled back
        throw error;
      });
    }

    // 3. After the end: once no admitted target is left, undo what `prepare` changed, and close a rollback.
    if (isTerminal(rollout.state) && view.count('PROGRESSING') === 0 && !rollout.engineState.finished) {
      if (driver.finish) {
        const active = await this.rollouts.list({ kind: rollout.kind, states: ACTIVE_ROLLOUT_STATES }, ACTIVE_ROLLOUTS_PAGE, undefined);
        await driver.finish(
          rollout,
          signal,
          active.items.filter((other) => other.id !== rollout.id),
        );
      }
      await this.rollouts.updateEngineState(rolloutId, { finished: true });
      this.views.delete(rolloutId);
      if (rollout.rollbackOfId && rollout.state === 'SUCCEEDED') {
        await this.rollouts.transition(rollout.rollbackOfId, 'ROLLED_BACK', `rolled back by ${rollout.id}`).catch((error: unknown) => {
          if (!(error instanceof ConflictError)) throw error;
        });
      }
      return {};
    }
    if (rollout.state === 'PAUSED' && view.count('PROGRESSING') === 0) return {};
    const untilDeadline = Number.isFinite(nextDeadline) ? Math.max(10, nextDeadline - this.now()) : this.pollMs;
    return { requeueAfterMs: Math.min(this.pollMs, untilDeadline) };
  }

  /** The cached view of the rollout's targets, or a fresh one when there is none or the rollout changed state. */
  private async viewOf(rollout: Rollout): Promise<RolloutView> {
    const cached = this.views.get(rollout.id);
    if (cached && cached.seenState === rollout.state) return cached;
    const view = new RolloutView(await this.rollouts.allTargets(rollout.id), rollout.state);
    this.views.set(rollout.id, view);
    return view;
  }

  /**
   * Starts a rollout that returns every target the given rollout changed (or was changing) to the version it ran
   * before. An active original is aborted in the rollback's own creating transaction, so a rollback that is refused
   * (its key used for another request, a guard, an overlap) leaves the original as it was (issue 34, finding 4). The
   * original becomes ROLLED_BACK when the rollback succeeds. A retry with the same key returns the same rollback, even
   * once the original is ROLLED_BACK (the schema's promise; finding 6).
   *
   * `rules` (the kind's, from the API) may refuse a rollback the cluster cannot run, and give the launch a guard to
   * run under the launch lock (launchRules.ts: RollbackRules).
   */
  async rollback(rolloutId: string, options: RollbackOptions = {}): Promise<LaunchResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.rollbackOnce(rolloutId, options);
      } catch (error) {
        // The original admitted a target while the rollback was planned: nothing was written; plan it again.
        if (!(error instanceof RollbackPlanStale) || attempt >= ROLLBACK_PLAN_ATTEMPTS) throw error;
      }
    }
  }

  private async rollbackOnce(rolloutId: string, options: RollbackOptions): Promise<LaunchResult> {
    if (!this.launcher) throw new AppError(ErrorCode.Unavailable, 'the rollout engine is not running');
    const original = await this.rollouts.require(rolloutId);
    const request = { rollbackOf: rolloutId };
    // Aborting a rollout cancels only its PENDING targets, so these are the rollback's targets before and after.
    const targets = await this.rollbackTargets(rolloutId);
    const plan = targets.map((t) => ({
      namespace: t.namespace,
      name: t.name,
      fromVersion: t.fromVersion,
      toVersion: t.toVersion,
      action: 'change' as const,
      reason: null,
    }));
    if (options.idempotencyKey) {
      const made = await this.launcher.replayOf(options.idempotencyKey, original.kind, request);
      if (made) return { rollout: made, plan, created: false, dryRun: false };
    }
    if (original.state === 'ROLLED_BACK') throw new ConflictError(`rollout ${rolloutId} is already rolled back`);
    if (targets.length === 0) throw new ConflictError(`rollout ${rolloutId} changed no target; there is nothing to roll back`);
    const guard = options.rules ? (await options.rules(original, targets)).guard : undefined;
    return this.launcher.launch({
      plan: {
        kind: original.kind,
        fromVersion: original.toVersion,
        toVersion: original.fromVersion ?? 'previous revision of each target',
        selector: { rollbackOf: rolloutId },
        strategy: rollbackStrategyOf(original.strategy),
        targets,
      },
      cause: options.cause ?? { message: `rollback of ${rolloutId}` },
      idempotencyKey: options.idempotencyKey ?? null,
      request,
      rollbackOfId: rolloutId,
      // Not a supersede: it takes over only its original (aborted with the launch; a rollback waits for no admitted
      // target of it), while a newer rollout of the same targets is CONFLICT, as for a bump (attack finding F8: it
      // was aborted without asking, and a retried rollback aborted the first).
      supersede: false,
      ...(isTerminal(original.state) ? {} : { takeOver: rolloutId }),
      ...(guard ? { guard } : {}),
    });
  }

  /** What a rollback of the rollout changes: each target it changed (or was changing) back to where it was. */
  private async rollbackTargets(rolloutId: string): Promise<NewTarget[]> {
    return (await this.rollouts.allTargets(rolloutId))
      .filter(changedByRollout)
      .map((t) => ({ namespace: t.namespace, name: t.name, fromVersion: t.toVersion, toVersion: t.fromVersion! }));
  }

  /**
   * Writes the change for each target (in parallel, idempotently), then records them as PROGRESSING in batches.
   * Whatever was written before a failure is still recorded; the rest is admitted again on the next pass.
   */
  private async admit(driver: RolloutDriver, rollout: Rollout, view: RolloutView, targets: RolloutTarget[], signal: AbortSignal): Promise<void> {
    const admittedChanges: TargetChange[] = [];
    let next = 0;
    const worker = async () => {
      while (next < targets.length && !signal.aborted) {
        const target = targets[next++]!;
        const admittedAt = new Date(this.now());
        const admitted = this.admitted(rollout, { ...target, admittedAt });
        try {
          await driver.admit(admitted, rollout, signal);
          admittedChanges.push({ target, to: 'PROGRESSING', countAttempt: true, at: admittedAt });
        } catch (error) {
          // A target that vanished or cannot take the change fails; anything else (API down, conflict) is retried.
          if (!(isAppError(error) && (error.code === ErrorCode.NotFound || error.code === ErrorCode.BadUserInput))) throw error;
          admittedChanges.push({ target, to: 'FAILED', countAttempt: true, error: error.message, at: admittedAt });
        }
        if (admittedChanges.length >= RECORD_BATCH) await this.record(rollout, view, admittedChanges.splice(0));
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.admissionConcurrency, targets.length) }, worker));
    } finally {
      await this.record(rollout, view, admittedChanges.splice(0));
    }
  }

  /** Records target changes in one transaction and mirrors them into the view and the routing index. */
  private async record(rollout: Rollout, view: RolloutView, changes: TargetChange[]): Promise<void> {
    for (let i = 0; i < changes.length; i += RECORD_BATCH) {
      const updated = await this.rollouts.setTargetStates(rollout.id, changes.slice(i, i + RECORD_BATCH));
      for (const target of updated) {
        view.update(target);
        const key = this.indexKey(rollout.kind, target);
        if (target.state === 'PROGRESSING') this.progressingTargets.set(key, rollout.id);
        else this.progressingTargets.delete(key);
      }
    }
  }

  private admitted(rollout: Rollout, target: RolloutTarget): AdmittedTarget {
    return {
      rolloutId: rollout.id,
      kind: rollout.kind,
      namespace: target.namespace,
      name: target.name,
      ordinal: target.ordinal,
      fromVersion: target.fromVersion,
      toVersion: target.toVersion,
      admittedAt: target.admittedAt ?? new Date(this.now()),
    };
  }

  private indexKey(kind: RolloutKind, target: { namespace: string; name: string }): string {
    return `${kind}|${targetKey(target)}`;
  }

  /** Engine-initiated transitions lose gracefully to a concurrent user action (pause, abort). */
  private async transition(rollout: Rollout, to: Rollout['state'], message: string | null): Promise<Rollout> {
    try {
      const next = await this.rollouts.transition(rollout.id, to, message);
      this.logger.info({ rolloutId: rollout.id, from: rollout.state, to }, 'rollout state changed');
      return next;
    } catch (error) {
      if (error instanceof ConflictError) return (await this.rollouts.get(rollout.id)) ?? rollout;
      throw error;
    }
  }
}
