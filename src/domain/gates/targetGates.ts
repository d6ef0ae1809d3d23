import { nextAnalysisStep } from '../kinds/strategy.js';
import type { Rollout, RolloutTarget } from '../RolloutService.js';
import type { RolloutView } from '../RolloutView.js';
import type { GateView } from '../waves/StagedRuns.js';

/**
 * Analysis between the targets of a rollout without waves (issue 33, ADR 0071): the port the engine asks, on each pass
 * that may admit, what the rollout's `strategy.analysis` allows. Implemented over the analysis gate service
 * (src/analysis/targetGates.ts); every answer comes from SQL, so a new leader answers the same.
 */

/** A step's gate key: `targets:<n>`, the analysis after the first n targets were admitted and done. */
export const TARGET_GATE_PREFIX = 'targets:';

export function targetGateKey(step: number): string {
  return `${TARGET_GATE_PREFIX}${step}`;
}

/** The step of a `targets:<n>` key, or undefined for any other key. */
export function targetGateStep(key: string): number | undefined {
  if (!key.startsWith(TARGET_GATE_PREFIX)) return undefined;
  const digits = key.slice(TARGET_GATE_PREFIX.length);
  return /^[1-9][0-9]{0,6}$/.test(digits) ? Number(digits) : undefined;
}

/** The targets a step stands after: those admitted after the previous step passed, up to the step (in plan order). */
export function stepTargets(view: RolloutView, passed: number, step: number): RolloutTarget[] {
  const admitted = view.targets.filter((t) => t.state !== 'PENDING' && t.state !== 'SKIPPED' && t.state !== 'CANCELLED');
  return admitted.slice(Math.min(passed, admitted.length), step);
}

/**
 * Where a rollout's steps stand (an analysis's or a gate's between targets, the same rule): admit up to `admit` more
 * targets, or `step`: its targets are admitted and done, and its gate decides now.
 */
export function stepDue(spec: Parameters<typeof nextAnalysisStep>[0], view: RolloutView, passed: number): { admit: number } | { step: number } {
  const step = nextAnalysisStep(spec, view.changing(), passed);
  if (step === undefined) return { admit: Infinity };
  const admitted = view.admittedSoFar();
  if (admitted < step) return { admit: step - admitted };
  // The step's targets are still converging: nothing more is admitted, and its gate opens only once they are done.
  if (view.count('PROGRESSING') > 0) return { admit: 0 };
  return { step };
}

/** What this pass does about the analysis (or the gate) between targets. */
export type TargetGateAction =
  /** Admit up to `cap` more targets (Infinity: the analysis holds nothing back). */
  | { readonly do: 'admit'; readonly cap: number }
  /** The step's analysis measures: admit nothing; look again by `until`. */
  | { readonly do: 'wait'; readonly until: Date }
  /** The analysis failed: the rollout fails (its auto-rollback applies). */
  | { readonly do: 'fail'; readonly message: string }
  /** Inconclusive, or Error past its limit: the rollout pauses with the reason (retryGate, or resume to accept it). */
  | { readonly do: 'hold'; readonly key: string; readonly message: string };

/** The action, and the last step passed (kept as `engineState.analysisPassed`). */
export type TargetGateStep = TargetGateAction & { readonly passed: number };

export interface TargetGates {
  /** From SQL only (plus opening the step's analysis, which records its run once and measures in the background). */
  step(rollout: Rollout, view: RolloutView, now: Date): Promise<TargetGateStep>;
  /** The rollout's analysis steps that opened, as gates (the API's `Rollout.gates`), in step order. */
  gates(rollout: Rollout, now: Date): Promise<GateView[]>;
  /**
   * The rollout ended (the engine's finish): its analyses still measuring — between targets or at its waves' gates —
   * are cancelled with the reason (e.g. superseded by a newer rollout), never left to decide for a rollout that is over.
   */
  release(rollout: Rollout): Promise<void>;
  /**
   * What the rollout waits on now between its targets (`Rollout.waitingFor`): the step measuring and how far, e.g.
   * `analysis targets:3: measuring, 2 of 5 measurements`; undefined when no step measures.
   */
  waiting(rollout: Rollout): Promise<string | undefined>;
  /** retryGate for a `targets:<n>` key: a new attempt linked to the last (NOT_FOUND / CONFLICT as for wave gates). */
  retry(rollout: Rollout, key: string, now: Date): Promise<GateView>;
}
