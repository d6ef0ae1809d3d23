import { AppError, ConflictError, ErrorCode, isAppError } from '../errors.js';
import type { RolloutKind } from './events.js';
import {
  admit,
  admittedTarget,
  type Arrival,
  type Decision,
  decide,
  finish,
  halt,
  observe,
  type Pass,
  prepare,
  requeueAfterMs,
  rollBack,
} from './engineSteps.js';
import { rollbackStrategyOf } from './kinds/strategy.js';
import type { RolloutDriver } from './ports.js';
import type { IdempotencyKeyRef } from './historyPort.js';
import { ENGINE_IDEMPOTENCY_SCOPE, type LaunchResult, type RolloutLauncher } from './RolloutLauncher.js';
import { changedByRollout, RollbackPlanStale, type RollbackRules } from './launchRules.js';
import type { Cause, NewTarget, Rollout, RolloutService, RolloutTarget, TargetChange } from './RolloutService.js';
import { clusterField, clusterOf, targetKey, type TargetRef } from './ports.js';
import { ACTIVE_ROLLOUT_STATES, isTerminal } from './rolloutStates.js';
import { RolloutView } from './RolloutView.js';
import { decideStage } from './waves/engineStage.js';
import { decide as decideWindow } from './gates/maintenanceWindows.js';
import { stepGate } from './gates/stepGates.js';
import { type TargetGates, targetGateStep } from './gates/targetGates.js';
import type { StoredRun } from './waves/StagedRuns.js';
import { stagedAdmission } from './waves/unreachable.js';

/** How often a rollout whose clusters are all outside any window within the horizon looks again (a policy may change). */
const WINDOW_RECHECK_MS = 60_000;

/** Target changes recorded per transaction. */
const RECORD_BATCH = 500;

export interface EngineOptions {
  /** How often an active rollout is re-evaluated even without a target change (default 1 s). */
  pollMs?: number;
  /**
   * Large rollouts observe only the targets their driver reported changed, and every PROGRESSING target at most this
   * often (default 5 s), which bounds how late a missed notification is noticed. Rollouts with few targets in flight
   * (engineSteps.ts: FULL_OBSERVATION_BELOW) observe all of them on every pass.
   */
  fullObservationMs?: number;
  /** Admissions written in parallel within one reconcile (default 16). */
  admissionConcurrency?: number;
  /**
   * The registered member clusters' labels, which maintenance-window policies select by (a cluster missing here has
   * none, as `local`). Default: none.
   */
  clusterLabels?: () => Promise<ReadonlyMap<string, Record<string, string>>>;
  /** The registered member clusters' health states (a staged run's unreachable policy reads UNREACHABLE). Default: none. */
  clusterHealth?: () => Promise<ReadonlyMap<string, string>>;
  /** Analysis between the targets of a rollout without waves (`strategy.analysis`, ADR 0071). Default: none. */
  targetGates?: TargetGates;
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
  /** Who starts the rollback (Rollout.startedBy): its caller, or `rollplane` for the engine's automatic one. */
  startedBy?: string | null;
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
  private readonly clusterLabels: () => Promise<ReadonlyMap<string, Record<string, string>>>;
  private readonly clusterHealth: () => Promise<ReadonlyMap<string, string>>;
  private readonly targetGates: TargetGates | undefined;
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
    this.clusterLabels = options.clusterLabels ?? (async () => new Map());
    this.clusterHealth = options.clusterHealth ?? (async () => new Map());
    this.targetGates = options.targetGates;
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

  /** A target changed in its cluster (`local` when none is named): re-evaluate the rollout that is changing it, if any. */
  targetChanged(kind: RolloutKind, namespace: string, name: string, cluster?: string): void {
    const key = targetKey({ ...clusterField(cluster), namespace, name });
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

  /**
   * One pass over the rollout: the steps (engineSteps.ts) each return a decision, which `apply` carries out. Halt and
   * prepare run before the rollout's view is read (they may change the rollout's state, and with it its targets).
   */
  async reconcile(rolloutId: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    const arrival = await this.arrive(rolloutId);
    if (!arrival) return {};
    for (const step of [halt, prepare]) await this.apply(arrival, await step(arrival), signal);
    const pass: Pass = {
      ...arrival,
      view: await this.viewOf(arrival.rollout),
      now: this.now,
      fullObservationMs: this.fullObservationMs,
      nextDeadline: Infinity,
      stillProgressing: (target) => this.progressingTargets.set(this.indexKey(arrival.rollout.kind, target), rolloutId),
    };
    const run = await this.rollouts.runs.runOf(rolloutId);
    if (run) return this.stagedPass(pass, run, signal);
    for (const step of [observe, decide]) {
      const end = await this.apply(pass, await step(pass), signal);
      if (end) return end;
    }
    const gateWaitsUntil = await this.analyseTargets(pass);
    const windowOpensAt = await this.closedClusters(pass);
    for (const step of [admit, rollBack, finish]) {
      const end = await this.apply(pass, await step(pass), signal);
      if (end) return end;
    }
    if (gateWaitsUntil !== undefined && pass.view.count('PROGRESSING') === 0) {
      // Nothing in flight and a gate between targets waits: nothing to observe, so look again at its time (a decision,
      // a check's or an alert look's answer, a pause or an abort wake the rollout before), not every pollMs.
      return { requeueAfterMs: Math.max(10, gateWaitsUntil - this.now()) };
    }
    if (windowOpensAt !== undefined && pass.view.count('PROGRESSING') === 0) {
      // Nothing in flight and every pending cluster outside its window: look again when the first one opens.
      return { requeueAfterMs: Number.isFinite(windowOpensAt) ? Math.max(10, windowOpensAt - this.now()) : WINDOW_RECHECK_MS };
    }
    return { requeueAfterMs: requeueAfterMs(pass.nextDeadline, this.now(), this.pollMs) };
  }

  /**
   * Analysis between targets (`strategy.analysis`, ADR 0071), or a gate between them (`strategy.gate`: approval, timed
   * wait, external check, alert; its addendum): after each step of targets is done, its analysis or gate decides
   * before more are admitted — the cap shrinks (to 0 while it waits), a failure or rejection fails the rollout (the
   * rollback step follows), Inconclusive or Error pauses it with the reason. A resume after such a pause accepts the step.
   */
  private async analyseTargets(pass: Pass): Promise<number | undefined> {
    const { rollout } = pass;
    const analyses = rollout.strategy.analysis ? this.targetGates : undefined;
    if (pass.admissionCap === undefined || (!analyses && !rollout.strategy.gate)) return undefined;
    const paused = rollout.engineState.pausedAnalysis;
    const accepted = paused ? targetGateStep(paused) : undefined;
    if (paused) {
      await this.rollouts.updateEngineState(rollout.id, {
        pausedAnalysis: null,
        analysisPassed: Math.max(accepted ?? 0, rollout.engineState.analysisPassed ?? 0),
      });
      pass.rollout = (await this.rollouts.get(rollout.id))!;
    }
    const now = new Date(this.now());
    const step = analyses ? await analyses.step(pass.rollout, pass.view, now) : await stepGate(this.rollouts.runs, pass.rollout, pass.view, now);
    if (step.passed > (pass.rollout.engineState.analysisPassed ?? 0)) await this.rollouts.updateEngineState(rollout.id, { analysisPassed: step.passed });
    if (step.do === 'admit') {
      pass.admissionCap = Math.min(pass.admissionCap, step.cap);
      return undefined;
    }
    pass.admissionCap = undefined;
    if (step.do === 'wait') {
      pass.nextDeadline = Math.min(pass.nextDeadline, step.until.getTime());
      // A gate's wait (`strategy.gate`) is woken by what ends it; an analysis keeps the engine's polling.
      return rollout.strategy.gate ? step.until.getTime() : undefined;
    }
    if (step.do === 'fail') await this.transitionPass(pass, 'FAILED', step.message);
    else {
      await this.transitionPass(pass, 'PAUSED', step.message);
      if (pass.rollout.state === 'PAUSED') await this.rollouts.updateEngineState(rollout.id, { pausedAnalysis: step.key });
    }
    return undefined;
  }

  /**
   * Maintenance windows for a rollout without waves (issue 30): when any policy exists, only the pending targets of
   * clusters inside an allowed window are admitted (`admitClusters`). Returns when the earliest closed cluster opens
   * if no pending cluster may start now (Infinity: none within the horizon); undefined when windows hold nothing back.
   * With no policy, nothing is read beyond the policy list, and the pass is what it was before windows.
   */
  private async closedClusters(pass: Pass): Promise<number | undefined> {
    if (pass.admissionCap === undefined || pass.view.count('PENDING') === 0) return undefined;
    const policies = await this.rollouts.windows.policies();
    if (policies.length === 0) return undefined;
    const labels = await this.clusterLabels();
    const now = new Date(this.now());
    const open = new Set<string>();
    let opensAt = Infinity;
    for (const cluster of new Set(pass.view.inState('PENDING').map(clusterOf))) {
      const decision = decideWindow(policies, labels.get(cluster) ?? {}, now);
      if (decision.open) open.add(cluster);
      else if (decision.until) opensAt = Math.min(opensAt, decision.until.getTime());
    }
    pass.admitClusters = open;
    return open.size === 0 ? opensAt : undefined;
  }

  /**
   * A staged rollout's pass (issue 30, ADR 0065): observe as any rollout, then — instead of the kind's failure
   * threshold and canary — the run's next step from what is recorded (engineStage.ts): admit only the clusters it
   * names, open a gate, wait, or end as the failure policy says. Nothing decided here is kept in memory: a leader that
   * takes over reads the same rows and decides the same step.
   */
  private async stagedPass(pass: Pass, run: StoredRun, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    const waveDeadlines = new Map(
      run.waves.flatMap((w) => (w.progressDeadlineSeconds === null ? [] : w.clusters.map((c) => [c, w.progressDeadlineSeconds!] as const))),
    );
    if (waveDeadlines.size > 0) pass.deadlineSecondsOf = (target) => waveDeadlines.get(clusterOf(target)) ?? pass.rollout.strategy.progressDeadlineSeconds;
    const end = await this.apply(pass, await observe(pass), signal);
    if (end) return end;
    let wake: { requeueAfterMs?: number } | undefined;
    if (pass.rollout.state === 'PROGRESSING') {
      const decided = await this.decideStaged(pass, run);
      if ('end' in decided) return decided.end;
      wake = decided.wake;
      if (wake === undefined) {
        const end = await this.apply(pass, await admit(pass), signal);
        if (end) return end;
      }
    }
    for (const step of [rollBack, finish]) {
      const end = await this.apply(pass, await step(pass), signal);
      if (end) return end;
    }
    return wake ?? { requeueAfterMs: requeueAfterMs(pass.nextDeadline, this.now(), this.pollMs) };
  }

  /**
   * Records what moved (gates, waves), then carries out the run's step. Returns `end` when the pass ends here, `wake`
   * when nothing is in flight and the run waits (at the step's time, or for a decision or a user when it has none).
   */
  private async decideStaged(pass: Pass, run: StoredRun): Promise<{ end: { requeueAfterMs?: number } } | { wake?: { requeueAfterMs?: number } }> {
    const { rollout } = pass;
    const now = new Date(this.now());
    let accepted = rollout.engineState.acceptedWaves ?? [];
    if (rollout.engineState.pausedWave) {
      // PROGRESSING again after the engine paused on a wave's failure: a user resumed, accepting it.
      accepted = [...accepted, rollout.engineState.pausedWave];
      await this.rollouts.updateEngineState(rollout.id, { pausedWave: null, acceptedWaves: accepted });
    }
    // Gates' progress is read from what was kept (their rows, attempts, analysis runs): no network call and no lock held
    // here. Then each waiting gate's own work is (re)started — in the background, so a slow endpoint delays no pass.
    const gates = await this.rollouts.runs.gates(rollout.id, now, { run, rollout });
    await this.rollouts.runs.recordGates(rollout.id, rollout.kind, gates, now);
    await this.rollouts.runs.startWaiting(gates, { run, rollout }, now);
    const [policies, labels, health] = await Promise.all([this.rollouts.windows.policies(), this.clusterLabels(), this.clusterHealth()]);
    const since = rollout.engineState.unreachableSince ?? {};
    // Unreachable under WAIT: not started, looked at again shortly (a member's health change does not wake the engine).
    const { verdict, window, waitedFor } = stagedAdmission(run, health, since, now, (cluster) => decideWindow(policies, labels.get(cluster) ?? {}, now));
    const waitsUnreachable = (cluster: string) => verdict(cluster).do === 'wait';
    const { decision, waves, step } = decideStage({ run, gates, accepted: new Set(accepted), now, window }, pass.view.clusterOutcomes());
    await this.rollouts.runs.recordWaves(rollout.id, rollout.kind, run, waves, now);
    const firstSeen = run.unreachableWait ? [...waitedFor].filter((c) => since[c] === undefined) : [];
    if (firstSeen.length > 0) {
      // WAIT's bound counts from when the run first found the cluster down: kept, so a new leader counts from it too.
      await this.rollouts.updateEngineState(rollout.id, {
        unreachableSince: { ...since, ...Object.fromEntries(firstSeen.map((c) => [c, now.toISOString()])) },
      });
    }
    if (step.do === 'admit') {
      // Unreachable under SKIP or FAIL (or WAIT past its bound): its pending targets end now, with the reason.
      const ends = new Map(step.clusters.map((c) => [c, verdict(c)] as const).filter(([, v]) => v.do === 'end'));
      const changes =
        ends.size === 0
          ? []
          : pass.view.targets.flatMap((target) => {
              const v = target.state === 'PENDING' ? ends.get(clusterOf(target)) : undefined;
              return v?.do === 'end' ? [{ target, to: v.to, error: v.reason, at: now }] : [];
            });
      if (changes.length > 0) {
        await this.record(rollout, pass.view, changes);
        return { end: { requeueAfterMs: 1 } };
      }
    }
    const held = rollout.engineState.windowHeld ?? null;
    if (step.do === 'wait' && step.heldByWindows?.some((c) => !waitsUnreachable(c)) && held !== step.wave) {
      await this.rollouts.runs.recordWindow(
        rollout.id,
        rollout.kind,
        { held: true, wave: step.wave, clusters: step.heldByWindows, reason: step.reason, until: step.until },
        now,
      );
    } else if (step.do === 'admit' && held !== null) {
      await this.rollouts.runs.recordWindow(rollout.id, rollout.kind, { held: false, wave: step.wave, clusters: step.clusters }, now);
    }
    switch (decision.do) {
      case 'admit in': {
        pass.admitClusters = decision.clusters;
        pass.admissionCap = Infinity;
        if (decision.waiting === null || pass.view.count('PROGRESSING') > 0) return {};
        // Nothing in flight: look again when the step says (a soak's end, a gate's deadline), else when woken.
        return { wake: decision.wakeAt ? { requeueAfterMs: Math.max(10, decision.wakeAt.getTime() - this.now()) } : {} };
      }
      case 'open gate':
        await this.rollouts.runs.openGate(rollout, { run }, decision.key, decision.spec, now);
        return { end: { requeueAfterMs: 1 } };
      case 'succeed':
        await this.transitionPass(pass, 'SUCCEEDED', decision.message);
        return {};
      case 'pause':
        // In this order: a crash in between leaves a pause that a resume does not take as accepting the failure (the
        // engine pauses again), never a PROGRESSING run that looks resumed.
        await this.transitionPass(pass, 'PAUSED', decision.message);
        if (pass.rollout.state === 'PAUSED') await this.rollouts.updateEngineState(rollout.id, { pausedWave: decision.wave });
        return {};
      case 'fail':
        await this.rollouts.updateEngineState(rollout.id, { rollBackRun: decision.rollBack });
        await this.transitionPass(pass, 'FAILED', decision.message);
        return {};
    }
  }

  /** The rollout and its kind's driver, or undefined when the engine has nothing (more) to do for it. */
  private async arrive(rolloutId: string): Promise<Arrival | undefined> {
    const rollout = await this.rollouts.get(rolloutId);
    if (!rollout) {
      this.views.delete(rolloutId);
      return undefined;
    }
    const driver = this.drivers.get(rollout.kind);
    if (!driver) {
      throw new AppError(ErrorCode.Unavailable, `no ${rollout.kind} controller runs in this rollplane; rollout ${rolloutId} waits`);
    }
    if (rollout.engineState.finished) {
      this.views.delete(rolloutId);
      return undefined;
    }
    return { rollout, driver };
  }

  /**
   * Carries out a step's decision: the only place a pass writes (the store, the cluster through the driver). Returns
   * the pass's result when the decision ends it.
   */
  private async apply(pass: Arrival | Pass, decision: Decision, signal: AbortSignal): Promise<{ requeueAfterMs?: number } | undefined> {
    const { rollout, driver } = pass;
    switch (decision.do) {
      case 'nothing':
        return undefined;
      case 'transition':
        await this.transitionPass(pass, decision.to, decision.message);
        return undefined;
      case 'start':
        await driver.prepare?.(rollout, signal, () => this.changingClusters(rollout));
        await this.transitionPass(pass, 'PROGRESSING', null);
        return undefined;
      case 'record': {
        const { changes, allObservedAt, nextDeadline } = decision.outcomes;
        const viewed = withView(pass);
        if (allObservedAt !== undefined) {
          viewed.view.lastFullObservation = allObservedAt;
          viewed.view.earliestDeadline = nextDeadline;
          viewed.nextDeadline = nextDeadline;
        } else viewed.nextDeadline = Math.min(nextDeadline, viewed.view.earliestDeadline);
        await this.record(rollout, viewed.view, changes);
        // Only the rollout may have changed under us (a user paused or aborted it): the view is current.
        pass.rollout = (await this.rollouts.get(rollout.id))!;
        if (pass.rollout.state === viewed.view.seenState) return undefined;
        // An abort may have cancelled targets too: decide on a fresh view.
        this.views.delete(rollout.id);
        return { requeueAfterMs: 1 };
      }
      case 'pause at canary':
        await this.rollouts.updateEngineState(rollout.id, { canaryPaused: true });
        await this.transitionPass(pass, 'PAUSED', decision.message);
        return {};
      case 'proceed':
        if (decision.passCanary) await this.rollouts.updateEngineState(rollout.id, { canaryPassed: true });
        withView(pass).admissionCap = decision.cap;
        return undefined;
      case 'succeed':
        if (decision.passCanary) await this.rollouts.updateEngineState(rollout.id, { canaryPassed: true });
        await this.transitionPass(pass, 'SUCCEEDED', decision.message);
        return undefined;
      case 'held back':
        // Decided only when it differs from what engineState says: written when it changes.
        await this.rollouts.updateEngineState(rollout.id, { downOutside: decision.down });
        return undefined;
      case 'admit': {
        if (rollout.engineState.downOutside) await this.rollouts.updateEngineState(rollout.id, { downOutside: 0 });
        const viewed = withView(pass);
        await this.admit(driver, rollout, viewed.view, decision.targets, signal);
        const seconds = (target: RolloutTarget) => viewed.deadlineSecondsOf?.(target) ?? rollout.strategy.progressDeadlineSeconds;
        const deadline = this.now() + Math.min(...decision.targets.map(seconds)) * 1000;
        viewed.nextDeadline = Math.min(viewed.nextDeadline, deadline);
        viewed.view.earliestDeadline = Math.min(viewed.view.earliestDeadline, deadline);
        return undefined;
      }
      case 'roll back':
        await this.rollback(rollout.id, {
          cause: { actor: 'rollplane', message: `automatic rollback of ${rollout.id}` },
          // In the engine's own scope: no caller can claim it first (issue 34, finding 5).
          idempotencyKey: { scope: ENGINE_IDEMPOTENCY_SCOPE, key: `auto-rollback:${rollout.id}` },
          // Started by the engine, named as its keys' scope: no token's id is `rollplane`, so no approval is refused by it.
          startedBy: ENGINE_IDEMPOTENCY_SCOPE,
        }).catch((error: unknown) => {
          if (error instanceof ConflictError) return; // nothing changed, or already rolled back
          throw error;
        });
        return undefined;
      case 'finish':
        await this.finishRollout(driver, rollout, signal);
        return {};
      case 'rest':
        return {};
    }
  }

  /** After the end, with no admitted target left: undo what `prepare` changed, and close a rollback. */
  private async finishRollout(driver: RolloutDriver, rollout: Rollout, signal: AbortSignal): Promise<void> {
    if (driver.finish) {
      const active = await this.rollouts.list({ kind: rollout.kind, states: ACTIVE_ROLLOUT_STATES }, ACTIVE_ROLLOUTS_PAGE, undefined);
      await driver.finish(
        rollout,
        signal,
        active.items.filter((other) => other.id !== rollout.id),
      );
    }
    // An analysis still measuring for a rollout that is over (aborted, superseded) is cancelled, saying why.
    await this.targetGates?.release(rollout);
    await this.rollouts.updateEngineState(rollout.id, { finished: true });
    this.views.delete(rollout.id);
    if (rollout.rollbackOfId && rollout.state === 'SUCCEEDED') {
      await this.rollouts.transition(rollout.rollbackOfId, 'ROLLED_BACK', `rolled back by ${rollout.id}`).catch((error: unknown) => {
        if (!(error instanceof ConflictError)) throw error;
      });
    }
  }

  /**
   * A transition decided by a step. Once the view is read, a state it was not read under drops it from the cache (a
   * transition of ours may change targets too: FAILED cancels the PENDING ones), so the next pass reads targets afresh.
   */
  private async transitionPass(pass: Arrival | Pass, to: Rollout['state'], message: string | null): Promise<void> {
    pass.rollout = await this.transition(pass.rollout, to, message);
    if ('view' in pass && pass.rollout.state !== pass.view.seenState) this.views.delete(pass.rollout.id);
  }

  /** The cached view of the rollout's targets, or a fresh one when there is none or the rollout changed state. */
  /** The clusters where the rollout changes a target (its targets elsewhere are all skipped). */
  private async changingClusters(rollout: Rollout): Promise<ReadonlySet<string>> {
    const view = await this.viewOf(rollout);
    return new Set([...view.byCluster()].filter(([, counts]) => counts.changing > 0).map(([cluster]) => cluster));
  }

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
   * `rules` (by default the kind's driver's `rollbackRules`) may refuse a rollback the cluster cannot run, and give the launch a guard to
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
    const rules = options.rules ?? this.drivers.get(original.kind)?.rollbackRules;
    const guard = rules ? (await rules(original, targets)).guard : undefined;
    return this.launcher.launch({
      plan: {
        kind: original.kind,
        fromVersion: original.toVersion,
        // When the original started from several versions: the one its changed targets go back to, if they agree (attack
        // 21, F2: the rollback of a failed bump over pools an aborted rollout had left on two images asked "for more than
        // one image" and was refused, the controller left on the failed one); else null, each target to its own.
        toVersion: original.fromVersion ?? onlyVersion(targets.map((t) => t.toVersion)),
        selector: { rollbackOf: rolloutId },
        strategy: rollbackStrategyOf(original.strategy),
        targets,
      },
      cause: options.cause ?? { message: `rollback of ${rolloutId}` },
      idempotencyKey: options.idempotencyKey ?? null,
      request,
      rollbackOfId: rolloutId,
      startedBy: options.startedBy ?? null,
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
    const changed = (await this.rollouts.allTargets(rolloutId)).filter(changedByRollout);
    // A staged original is rolled back last wave first, each wave's clusters in reverse order (issue 30).
    const run = await this.rollouts.runs.runOf(rolloutId);
    const ordered = run ? reverseWaveOrder(changed, run) : changed;
    return ordered.map((t) => ({ ...clusterField(t.cluster), namespace: t.namespace, name: t.name, fromVersion: t.toVersion, toVersion: t.fromVersion! }));
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
        const admitted = admittedTarget(rollout, { ...target, admittedAt }, this.now());
        // Routed to this rollout from its write on, not from when its batch is recorded PROGRESSING: a change noticed
        // in between (the target converges while the pass admits the others) would be dropped, and a large rollout
        // would see it only at its next full observation. `record` keeps or drops the route with the outcome.
        const route = this.indexKey(rollout.kind, target);
        this.progressingTargets.set(route, rollout.id);
        try {
          await driver.admit(admitted, rollout, signal);
          admittedChanges.push({ target, to: 'PROGRESSING', countAttempt: true, at: admittedAt });
        } catch (error) {
          // A target that vanished or cannot take the change fails; anything else (API down, conflict) is retried.
          if (!(isAppError(error) && (error.code === ErrorCode.NotFound || error.code === ErrorCode.BadUserInput))) {
            this.progressingTargets.delete(route); // still PENDING: admitted again on a later pass
            throw error;
          }
          admittedChanges.push({ target, to: 'FAILED', countAttempt: true, error: error.message, at: admittedAt });
        }
        if (admittedChanges.length >= RECORD_BATCH) await this.recordAdmissions(rollout, view, admittedChanges.splice(0));
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.admissionConcurrency, targets.length) }, worker));
    } finally {
      await this.recordAdmissions(rollout, view, admittedChanges.splice(0));
    }
  }

  /**
   * Records admissions, whose writes are made. An abort that came between a write and its record cancelled the target
   * (PENDING → CANCELLED), and the record, conditional on PENDING, was refused: the node or pool was changed while its
   * target said CANCELLED, and a rollback left it on the new version (seen on a loaded CI machine). Such a target is
   * recorded PROGRESSING from CANCELLED — admitted before the abort took effect, it finishes as every admitted target
   * does after an abort. Any other conflict (another writer moved the target on) stays one.
   */
  private async recordAdmissions(rollout: Rollout, view: RolloutView, changes: TargetChange[]): Promise<void> {
    try {
      await this.record(rollout, view, changes);
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      const now = await this.rollouts.get(rollout.id);
      if (now?.state !== 'ABORTED') throw error;
      const stored = new Map((await this.rollouts.allTargets(rollout.id)).map((t) => [targetKey(t), t]));
      const again = changes.flatMap((change) => {
        const target = stored.get(targetKey(change.target));
        if (!target || !(target.state === 'PENDING' || (target.state === 'CANCELLED' && change.to === 'PROGRESSING'))) return [];
        return [{ ...change, target }];
      });
      await this.record(rollout, view, again);
    }
  }

  /** Records target changes in one transaction and mirrors them into the view and the routing index. */
  private async record(rollout: Rollout, view: RolloutView, changes: TargetChange[]): Promise<void> {
    // Each change applies only from the state this view saw (the state an earlier change of the same call left):
    // otherwise another writer moved the target on, and the store refuses the batch (CONFLICT). The view is then
    // stale: dropped, so that the next pass, if this replica still leads, decides again on what is stored.
    const seen = new Map<string, RolloutTarget['state']>();
    const fenced = changes.map((change) => {
      const key = targetKey(change.target);
      const from = seen.get(key) ?? (change.target as Partial<RolloutTarget>).state;
      seen.set(key, change.to);
      return from === undefined ? change : { ...change, from };
    });
    for (let i = 0; i < fenced.length; i += RECORD_BATCH) {
      const updated = await this.rollouts.setTargetStates(rollout.id, fenced.slice(i, i + RECORD_BATCH)).catch((error: unknown) => {
        if (error instanceof ConflictError) this.views.delete(rollout.id);
        throw error;
      });
      for (const target of updated) {
        view.update(target);
        const key = this.indexKey(rollout.kind, target);
        if (target.state === 'PROGRESSING') this.progressingTargets.set(key, rollout.id);
        else this.progressingTargets.delete(key);
      }
    }
  }

  private indexKey(kind: RolloutKind, target: TargetRef): string {
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

/** Targets by their cluster's place in the run, last wave and last cluster first (a stable sort: in-cluster order kept). */
function reverseWaveOrder(targets: readonly RolloutTarget[], run: StoredRun): RolloutTarget[] {
  const rank = new Map(run.waves.flatMap((w) => w.clusters).map((cluster, i) => [cluster, i]));
  return [...targets].sort((a, b) => (rank.get(clusterOf(b)) ?? -1) - (rank.get(clusterOf(a)) ?? -1));
}

/** The pass once its view is read: the decisions that need one come only from the steps that run after. */
function withView(pass: Arrival | Pass): Pass {
  if (!('view' in pass)) throw new Error("a decision that needs the rollout's view came before it was read");
  return pass;
}

/** The one version all of `versions` are; null when they differ (or there are none). */
function onlyVersion(versions: readonly string[]): string | null {
  const distinct = new Set(versions);
  return distinct.size === 1 ? versions[0]! : null;
}
