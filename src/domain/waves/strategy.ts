import { ValidationError } from '../../errors.js';
import { z } from 'zod';
import type { RunRow, WaveRow } from '../historyPort.js';
import { GATE_TYPES, type GateTypes, gateTypeOf } from '../gates/registry.js';
import { type PlannedWave, planWaves, type WaveInput, type WavePlan } from './plan.js';
import type { FailurePolicy } from './progress.js';
import type { UnreachableWait } from './unreachable.js';

/**
 * A bump's `waveStrategy` (issue 30, ADR 0065): ordered waves over the bump's member clusters, what happens to the
 * clusters no wave picks, and what a failed wave does to the run. Frozen at launch (`freezeRun`) into the rollout's
 * RolloutRun and RolloutWave rows: labels changed later move no cluster, and the engine decides every step from the
 * rows and the recorded outcomes (progress.ts), never from memory.
 */
export interface GateSpec {
  type: string;
  config: Record<string, unknown>;
}

export interface FrozenWave extends PlannedWave {
  /** Seconds one target of the wave may take; null: the rollout strategy's progressDeadlineSeconds. */
  readonly progressDeadlineSeconds: number | null;
  readonly before: GateSpec | null;
  readonly after: GateSpec | null;
}

/** What a cluster the run reaches while it is UNREACHABLE gets: the run waits for it, skips it, or fails it. */
export type UnreachablePolicy = 'WAIT' | 'SKIP' | 'FAIL';

export interface FrozenRun extends WavePlan {
  readonly waves: readonly FrozenWave[];
  readonly failurePolicy: FailurePolicy;
  readonly unreachable: UnreachablePolicy;
  /** Under WAIT: how long the run waits for an UNREACHABLE cluster before WAIT acts as SKIP or FAIL; null: no bound. */
  readonly unreachableWait: UnreachableWait | null;
  /** The strategy as given (normalized), for the record. */
  readonly strategy: WaveStrategy;
  /** Who launched the run (token id or `anonymous`); null when unknown. */
  readonly startedBy: string | null;
}

const MAX_SECONDS = 31 * 24 * 3600;
/** A count as the API sends it (`"2"`, `"50%"`) or a number; `"2"` becomes 2 (plan.ts takes strings as percentages). */
const count = z
  .union([z.number(), z.string().max(10)])
  .nullish()
  .transform((v) => (typeof v === 'string' && /^\s*\d{1,6}\s*$/.test(v) ? Number(v) : v));
const gateInput = z.object({ type: z.string().max(40), config: z.unknown().nullish() }).nullish();

const waveInput = z.object({
  name: z.string().max(63),
  clusters: z.object({ names: z.array(z.string().max(63)).max(1000).nullish(), labelSelector: z.string().max(4096).nullish() }).nullish(),
  sortKey: z.string().max(317).nullish(),
  maxConcurrency: count,
  maxFailures: count,
  minSuccessSeconds: z.number().int().min(0).max(MAX_SECONDS).nullish(),
  progressDeadlineSeconds: z.number().int().min(1).max(MAX_SECONDS).nullish(),
  mandatory: z.boolean().nullish(),
  before: gateInput,
  after: gateInput,
});

/** `waveStrategy` as given; absent or null: the bump is not staged (exactly as before waves). */
export const waveStrategyInput = z
  .object({
    waves: z.array(waveInput).min(1).max(50),
    remainder: z.enum(['LAST_WAVE', 'EXCLUDED']).nullish(),
    failurePolicy: z.enum(['PAUSE', 'ROLLBACK_COMPLETED', 'CONTINUE']).nullish(),
    unreachable: z.enum(['WAIT', 'SKIP', 'FAIL']).nullish(),
    unreachableWaitSeconds: z.number().int().nullish(),
    unreachableAfterWait: z.enum(['WAIT', 'SKIP', 'FAIL']).nullish(),
  })
  .nullish()
  .transform((s) => s ?? undefined);
export type WaveStrategy = NonNullable<z.output<typeof waveStrategyInput>>;
/** The strategy as a caller writes it (counts as numbers or text). */
export type WaveStrategyRequest = NonNullable<z.input<typeof waveStrategyInput>>;

/**
 * The run's frozen plan over `clusters` (the bump's member clusters with their labels, as registered now). Refuses,
 * with the field path and before anything is stored: a wave naming a cluster outside the bump, a bad selector, count
 * or gate.
 */
export function freezeRun(
  strategy: WaveStrategy,
  clusters: readonly { name: string; labels: Record<string, string> }[],
  startedBy: string | null,
  field = 'input.waveStrategy',
  types: GateTypes = GATE_TYPES,
): FrozenRun {
  const inputs: WaveInput[] = strategy.waves.map((w) => ({
    name: w.name,
    clusters: w.clusters?.names ?? null,
    clusterSelector: w.clusters?.labelSelector ?? null,
    sortByLabel: w.sortKey ?? null,
    maxConcurrency: w.maxConcurrency ?? null,
    maxFailures: w.maxFailures ?? null,
    mandatory: w.mandatory ?? null,
  }));
  const plan = planWaves(inputs, clusters, strategy.remainder === 'EXCLUDED' ? 'EXCLUDE' : 'LAST_WAVE', `${field}.waves`);
  const waves = plan.waves.map((wave, i): FrozenWave => {
    const given = wave.remainder ? undefined : strategy.waves[i];
    return {
      ...wave,
      minSuccessMs: (given?.minSuccessSeconds ?? 0) * 1000,
      progressDeadlineSeconds: given?.progressDeadlineSeconds ?? null,
      before: gateSpec(given?.before, `${field}.waves[${i}].before`, types),
      after: gateSpec(given?.after, `${field}.waves[${i}].after`, types),
    };
  });
  const unreachable = strategy.unreachable ?? 'WAIT';
  return {
    waves,
    excluded: plan.excluded,
    failurePolicy: strategy.failurePolicy ?? 'PAUSE',
    unreachable,
    unreachableWait: unreachableWaitOf(strategy, unreachable, field),
    strategy,
    startedBy,
  };
}

/**
 * WAIT's bound as given (`unreachableWaitSeconds`, then `unreachableAfterWait`, default FAIL: a cluster the run gave
 * up waiting for counts against the wave unless the strategy says to skip it). Only under WAIT; refused otherwise.
 */
function unreachableWaitOf(strategy: WaveStrategy, unreachable: UnreachablePolicy, field: string): UnreachableWait | null {
  const seconds = strategy.unreachableWaitSeconds ?? null;
  const then = strategy.unreachableAfterWait ?? null;
  if (seconds === null) {
    if (then !== null) throw new ValidationError(`${field}.unreachableAfterWait`, 'applies only with unreachableWaitSeconds');
    return null;
  }
  if (unreachable !== 'WAIT') throw new ValidationError(`${field}.unreachableWaitSeconds`, `bounds WAIT; unreachable is ${unreachable}`);
  if (seconds < 1 || seconds > MAX_SECONDS) throw new ValidationError(`${field}.unreachableWaitSeconds`, `must be from 1 to ${MAX_SECONDS} (31 days)`);
  if (then === 'WAIT') throw new ValidationError(`${field}.unreachableAfterWait`, 'must be SKIP or FAIL (what WAIT does once the wait is over)');
  return { seconds, fallback: then ?? 'FAIL' };
}

function gateSpec(input: { type: string; config?: unknown } | null | undefined, field: string, types: GateTypes): GateSpec | null {
  if (!input) return null;
  const type = gateTypeOf(input.type, `${field}.type`, types);
  return { type: input.type, config: type.check(input.config, `${field}.config`) };
}

/** The rows a frozen run is stored as. */
export function runRows(rolloutId: string, run: FrozenRun, now: Date): { run: RunRow; waves: WaveRow[] } {
  return {
    run: {
      rolloutId,
      strategy: JSON.stringify(run.strategy),
      excluded: JSON.stringify(run.excluded),
      failurePolicy: run.failurePolicy,
      unreachable: run.unreachable,
      startedBy: run.startedBy,
      createdAt: now,
    },
    waves: run.waves.map((w, ordinal) => ({
      rolloutId,
      ordinal,
      name: w.name,
      clusters: JSON.stringify(w.clusters),
      maxConcurrency: w.maxConcurrency,
      maxFailures: w.maxFailures,
      minSuccessMs: w.minSuccessMs,
      progressDeadlineSeconds: w.progressDeadlineSeconds,
      mandatory: w.mandatory,
      remainder: w.remainder,
      beforeGate: w.before ? JSON.stringify(w.before) : null,
      afterGate: w.after ? JSON.stringify(w.after) : null,
      state: 'PENDING',
      reason: null,
      startedAt: null,
      finishedAt: null,
    })),
  };
}

/** A stored run read back. */
export function runOfRows(rows: { run: RunRow; waves: readonly WaveRow[] }): FrozenRun {
  const strategy = JSON.parse(rows.run.strategy) as WaveStrategy;
  return {
    waves: rows.waves.map((w) => ({
      name: w.name,
      clusters: JSON.parse(w.clusters) as string[],
      maxConcurrency: w.maxConcurrency,
      maxFailures: w.maxFailures,
      minSuccessMs: w.minSuccessMs,
      progressDeadlineSeconds: w.progressDeadlineSeconds,
      mandatory: w.mandatory,
      remainder: w.remainder,
      before: w.beforeGate ? (JSON.parse(w.beforeGate) as GateSpec) : null,
      after: w.afterGate ? (JSON.parse(w.afterGate) as GateSpec) : null,
    })),
    excluded: JSON.parse(rows.run.excluded) as string[],
    failurePolicy: rows.run.failurePolicy as FailurePolicy,
    unreachable: rows.run.unreachable as UnreachablePolicy,
    // Kept in the strategy as given (no column of its own): a run stored before the bound existed has none.
    unreachableWait: strategy.unreachableWaitSeconds
      ? { seconds: strategy.unreachableWaitSeconds, fallback: strategy.unreachableAfterWait === 'SKIP' ? 'SKIP' : 'FAIL' }
      : null,
    strategy,
    startedBy: rows.run.startedBy,
  };
}

/** Why an excluded cluster's targets start SKIPPED. */
export function excludedReason(cluster: string): string {
  return `member cluster ${cluster} is in no wave (remainder: EXCLUDED)`;
}
