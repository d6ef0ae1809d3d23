/**
 * The shared numbers of the kind contracts (ADR 0023): the strategy defaults, the integer range and the pure rules on
 * them. No schema library here, so that the CLI can check its flags against the same numbers without loading zod on
 * every invocation; the schemas in `strategy.ts` are built from these, and each kind's own numbers are in its
 * `src/kinds/<kind>/limits.ts` (which imports only this file).
 */

/** The defaults of the shared strategy fields, for every kind (schema.graphql's input defaults say the same: a test checks). */
export const STRATEGY_DEFAULTS = Object.freeze({
  maxUnavailable: '1',
  progressDeadlineSeconds: 600,
  failureThreshold: 1,
  autoRollback: false,
});

/** An inclusive integer range. */
export interface IntRange {
  min: number;
  max: number;
}

/** The one integer check of every input: one message for every kind. */
export function integerReason(value: number, range: IntRange): string | undefined {
  return Number.isInteger(value) && value >= range.min && value <= range.max
    ? undefined
    : `must be an integer between ${range.min} and ${range.max} (got ${value})`;
}

/** A maxUnavailable is at most this many digits (a count far beyond any fleet is a typo). */
const MAX_COUNT_DIGITS = 9;

/**
 * Parses a maxUnavailable (`"3"`, `"25%"`): the count, or the percentage; or why it is wrong. One rule for the API's
 * input, the engine's reading of a stored strategy and the CLI's flag.
 */
export function parseMaxUnavailable(value: string): { count: number } | { percent: number } | { reason: string } {
  const raw = value.trim();
  const percent = /^(\d{1,3})%$/.exec(raw);
  if (percent) {
    const p = Number(percent[1]);
    return p >= 1 && p <= 100 ? { percent: p } : { reason: `a percentage must be between 1% and 100% (got ${raw})` };
  }
  if (new RegExp(`^\\d{1,${MAX_COUNT_DIGITS}}$`).test(raw) && Number(raw) >= 1) return { count: Number(raw) };
  return { reason: `must be a positive count such as "2" or a percentage such as "25%" (got "${raw.slice(0, 40)}")` };
}

/** Normalized maxUnavailable (`" 25% "` → `"25%"`, `"03"` → `"3"`), or undefined when it is not valid. */
export function normalizeMaxUnavailable(value: string): string | undefined {
  const parsed = parseMaxUnavailable(value);
  return 'count' in parsed ? String(parsed.count) : 'percent' in parsed ? `${parsed.percent}%` : undefined;
}
