/**
 * What every rollout kind's strategy shares (ADR 0023): the fields the engine reads, their defaults, and the one set
 * of validators every kind's input schema is built from. A kind's strategy extends `BaseStrategy`
 * (`src/domain/kinds/<kind>.ts`); nothing reads a strategy by string key.
 */
import { z } from 'zod';
import { ValidationError } from '../../errors.js';
import { parseImageReference } from '../../util/imageReference.js';
import { parseLabelSelector } from '../labelSelector.js';
import { integerReason, parseMaxUnavailable, STRATEGY_DEFAULTS, type IntRange } from './limits.js';

export { integerReason, normalizeMaxUnavailable, parseMaxUnavailable, STRATEGY_DEFAULTS, type IntRange } from './limits.js';

/**
 * The fields the engine reads. `maxUnavailable`, `maxConcurrent` and `canary` are stored as the user gave them (absent
 * when not given) because the API shows them back that way; the engine resolves them with `admissionLimit`.
 */
export interface BaseStrategy {
  /** Count (`"3"`) or percentage (`"25%"`) of the changing targets in progress at once. */
  maxUnavailable?: string;
  /** A fixed number of targets in progress at once; wins over maxUnavailable when present. */
  maxConcurrent?: number;
  /**
   * Count (`"1"`) or percentage (`"10%"`, of that cluster's changing targets) of one member cluster's targets in
   * progress at once, beside the rollout-wide limit (issue 29); absent: only the rollout-wide one.
   */
  maxUnavailablePerMemberCluster?: string;
  /** Pause after this many targets until resumed. */
  canary?: number;
  progressDeadlineSeconds: number;
  failureThreshold: number;
  autoRollback: boolean;
  /** Set on a rollback rollout (its strategy is the original's, without canary or auto-rollback). */
  rollback?: boolean;
  /** An analysis between targets (issue 33, ADR 0071): measured after steps of targets, before more are admitted. */
  analysis?: TargetAnalysisSpec;
  /**
   * A gate between targets (issue 30, ADR 0071 addendum): APPROVAL, TIMED_WAIT, EXTERNAL_CHECK or ALERT at the same
   * steps as an analysis; never with `analysis` (one of them).
   */
  gate?: TargetGateSpec;
}

/**
 * Analysis between the targets of a rollout without waves (ADR 0071): once the targets of a step are done, an ANALYSIS
 * gate's config (`{template, args?, errorFails?}`) is measured before any more target is admitted. The steps are the
 * counts of targets admitted so far in `after` and every multiple of `every`, below the number of changing targets.
 */
export interface TargetAnalysisSpec {
  config: Record<string, unknown>;
  every?: number;
  after?: number[];
}

/** A gate between targets: its type and config (checked by the gate type at launch) and the same steps as an analysis. */
export interface TargetGateSpec {
  type: string;
  config: Record<string, unknown>;
  every?: number;
  after?: number[];
}

/** When a step gate or analysis stands: after every `every` targets and/or after the counts in `after`. */
export type TargetSteps = Pick<TargetAnalysisSpec, 'every' | 'after'>;

/** The most analysis steps a rollout may list in `after` (each step is one analysis run and its measurements). */
export const MAX_ANALYSIS_STEPS = 100;

const analysisCount = z.number().int().min(1, 'must be at least 1').max(1_000_000, 'must be at most 1000000');

const stepsInput = {
  every: analysisCount.nullish(),
  after: z
    .array(analysisCount)
    .max(MAX_ANALYSIS_STEPS, `lists at most ${MAX_ANALYSIS_STEPS} steps`)
    .refine((a) => a.every((n, i) => i === 0 || n > a[i - 1]!), 'must be in increasing order')
    .nullish(),
};

const hasSteps = (a: { every?: number | null; after?: readonly number[] | null }) => a.every != null || (a.after != null && a.after.length > 0);

const stepsOf = (a: { every?: number | null; after?: readonly number[] | null }): TargetSteps => ({
  ...(a.every != null ? { every: a.every } : {}),
  ...(a.after?.length ? { after: [...a.after] } : {}),
});

/** `strategy.analysis` as given: a config object (checked by the ANALYSIS gate type at launch), `every` and/or `after`. */
export const targetAnalysisInput = z
  .object({
    config: z.record(z.string(), z.unknown(), { error: 'must be an ANALYSIS gate config: {template, args?, errorFails?}' }),
    ...stepsInput,
  })
  .refine(hasSteps, 'needs `every` or `after`: when to measure')
  .transform((a): TargetAnalysisSpec => ({ config: a.config, ...stepsOf(a) }));

/** The gate types a step between targets may be (ANALYSIS has its own field, `strategy.analysis`). */
export const TARGET_GATE_TYPES = ['APPROVAL', 'TIMED_WAIT', 'EXTERNAL_CHECK', 'ALERT'] as const;

/**
 * `strategy.gate` as given: a gate type, its config (checked by the type at launch, RolloutLauncher), `every` and/or
 * `after` as for an analysis. The type is checked at launch too, where the refusal can point ANALYSIS elsewhere.
 */
export const targetGateInput = z
  .object({
    type: z.string(),
    config: z.record(z.string(), z.unknown(), { error: "must be a JSON object: the gate type's config" }).nullish(),
    ...stepsInput,
  })
  .refine(hasSteps, 'needs `every` or `after`: when the gate opens')
  .transform((g): TargetGateSpec => ({ type: g.type, config: g.config ?? {}, ...stepsOf(g) }));

/**
 * The first count of admitted targets above `passed` that an analysis stands after (from `after` and the multiples of
 * `every`), or undefined when none is left below `changing` (nothing is left to admit after the last target).
 */
export function nextAnalysisStep(spec: TargetAnalysisSpec | TargetGateSpec, changing: number, passed: number): number | undefined {
  const listed = spec.after?.find((n) => n > passed);
  const multiple = spec.every ? (Math.floor(passed / spec.every) + 1) * spec.every : undefined;
  const next = Math.min(listed ?? Infinity, multiple ?? Infinity);
  return next < changing ? next : undefined;
}

/** A zod integer field within `range`, with rollplane's message. */
export function intIn(range: IntRange) {
  return z.number().superRefine((value, ctx) => {
    const reason = integerReason(value, range);
    if (reason) ctx.addIssue({ code: 'custom', message: reason });
  });
}

/** Kubernetes' reading of maxUnavailable against the number of targets: percentages round down, at least 1. */
export function resolveMaxUnavailable(value: string | undefined, total: number, field = 'strategy.maxUnavailable'): number {
  const parsed = parseMaxUnavailable(value ?? STRATEGY_DEFAULTS.maxUnavailable);
  if ('reason' in parsed) throw new ValidationError(field, parsed.reason);
  return 'count' in parsed ? parsed.count : Math.max(1, Math.floor((total * parsed.percent) / 100));
}

/** How many targets may be in progress at once: maxConcurrent when present, else maxUnavailable of `changing`. */
export function admissionLimit(strategy: BaseStrategy, changing: number): number {
  return strategy.maxConcurrent ?? resolveMaxUnavailable(strategy.maxUnavailable, Math.max(1, changing));
}

/** A zod maxUnavailable input field: validated and stored trimmed. */
export const maxUnavailableInput = z.string().superRefine((value, ctx) => {
  const parsed = parseMaxUnavailable(value);
  if ('reason' in parsed) ctx.addIssue({ code: 'custom', message: parsed.reason });
});

/**
 * A zod string field checked by one of the domain's throwing parsers (image references, label selectors): its
 * ValidationError's reason becomes the issue, so the message is the parser's own.
 */
export function checkedBy(parse: (value: string, field: string) => unknown) {
  return z.string().superRefine((value, ctx) => {
    try {
      parse(value, 'value');
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message.slice('value: '.length) });
    }
  });
}

/** A rollback's selector, whatever its kind: the rollout it reverts (its targets are that rollout's). */
export const rollbackSelectorStored = z.object({ rollbackOf: z.string() });
export type RollbackSelector = z.output<typeof rollbackSelectorStored>;

/** A label selector field (`kubectl -l` form); empty means "no condition". */
export const labelSelectorInput = checkedBy((value, field) => (value === '' ? [] : parseLabelSelector(value, field)));

/** An image reference field (the OCI grammar of `src/util/imageReference.ts`, with its messages). */
export const imageReferenceInput = checkedBy(parseImageReference);

/**
 * The stored shape of the shared fields: rows written before a field existed get its default; a value of the wrong
 * type (hand-edited row) also falls back to the default rather than stopping the engine.
 */
export const baseStrategyStored = {
  maxUnavailable: z
    .union([z.string(), z.number().transform(String)])
    .optional()
    .catch(undefined),
  maxConcurrent: z.number().int().positive().optional().catch(undefined),
  maxUnavailablePerMemberCluster: z.string().optional().catch(undefined),
  canary: z.number().int().positive().optional().catch(undefined),
  progressDeadlineSeconds: z.number().int().positive().catch(STRATEGY_DEFAULTS.progressDeadlineSeconds).default(STRATEGY_DEFAULTS.progressDeadlineSeconds),
  failureThreshold: z.number().int().nonnegative().catch(STRATEGY_DEFAULTS.failureThreshold).default(STRATEGY_DEFAULTS.failureThreshold),
  autoRollback: z.boolean().catch(STRATEGY_DEFAULTS.autoRollback).default(STRATEGY_DEFAULTS.autoRollback),
  rollback: z.boolean().optional().catch(undefined),
  analysis: z
    .object({
      config: z.record(z.string(), z.unknown()),
      every: z.number().int().positive().optional(),
      after: z.array(z.number().int().positive()).optional(),
    })
    .optional()
    .catch(undefined),
  gate: z
    .object({
      type: z.string(),
      config: z.record(z.string(), z.unknown()),
      every: z.number().int().positive().optional(),
      after: z.array(z.number().int().positive()).optional(),
    })
    .optional()
    .catch(undefined),
};

/** Drops absent optional fields, so that a parsed strategy looks like the one planned (`toEqual` and JSON alike). */
export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** A rollback's strategy: the original's, without its canary, analysis or gate between targets, never rolling itself back. */
export function rollbackStrategyOf<S extends BaseStrategy>(original: S): S {
  const { canary: _canary, analysis: _analysis, gate: _gate, ...rest } = original;
  return { ...rest, autoRollback: false, rollback: true } as S;
}

/**
 * Parses `value` with `schema`; the first problem becomes a ValidationError naming the field (`input.strategy.canary`,
 * `input.pools.names[0]`) with the schema's message. Issues come in the schema's field order.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, prefix = 'input'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  let field = prefix;
  for (const key of issue.path) field += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  throw new ValidationError(field, issue.message);
}
