/**
 * The numbers of the kind contracts (ADR 0023): defaults and ranges, and the pure rules on them. No schema library
 * here, so that the CLI can check its flags against the same numbers without loading zod on every invocation; the
 * schemas in `strategy.ts` and `<kind>.ts` are built from these.
 */

/** The defaults of the shared strategy fields, for every kind (schema.graphql's input defaults say the same: a test checks). */
export const STRATEGY_DEFAULTS = Object.freeze({
  maxUnavailable: '1',
  progressDeadlineSeconds: 600,
  failureThreshold: 1,
  autoRollback: false,
});

/**
 * Agent pools roll a failed rollout back by default (issue 27): beside the vm-dhcp-controller a failed image left in
 * place is the image every evicted agent comes back with. Other kinds keep the shared default.
 */
export const AGENT_POOL_STRATEGY_DEFAULTS = Object.freeze({ ...STRATEGY_DEFAULTS, autoRollback: true });

/** An inclusive integer range. */
export interface IntRange {
  min: number;
  max: number;
}

export const AGENT_POOL_RANGES = Object.freeze({
  canary: { min: 1, max: 1_000_000 },
  progressDeadlineSeconds: { min: 1, max: 86_400 },
  failureThreshold: { min: 1, max: 1_000_000 },
} satisfies Record<string, IntRange>);

export type NodeAgentMode = 'NODE_BY_NODE' | 'SURGE';
/**
 * The mode when the caller names none and the DaemonSet does not update by surge itself (issue 27: a chart-shaped
 * set — RollingUpdate, maxSurge ≥ 1, maxUnavailable 0 — defaults to SURGE, the chart's own zero-downtime way).
 */
export const DEFAULT_NODE_AGENT_MODE: NodeAgentMode = 'NODE_BY_NODE';
/** Added to the agent's startup budget (startupProbe) for the node deadline when none is given: the image pull. */
export const NODE_AGENT_PULL_ALLOWANCE_SECONDS = 120;
export const DEFAULT_PEER_RUNTIME_CLASS = 'kata-remote';
/** How long a new agent must stay Ready before its node counts as done, unless told. */
export const DEFAULT_MIN_READY_SECONDS = 0;
export const NODE_AGENT_RANGES = Object.freeze({
  nodeDeadlineSeconds: { min: 1, max: 86_400 },
  minReadySeconds: { min: 0, max: 3_600 },
  failureThreshold: { min: 1, max: 10_000 },
} satisfies Record<string, IntRange>);

/** Clusters upgrading at once, unless told. */
export const DEFAULT_MAX_CONCURRENT = 1;
export const MAX_CLUSTERS = 10_000;
export const VIRTUAL_CLUSTER_RANGES = Object.freeze({
  maxConcurrent: { min: 1, max: 1000 },
  failureThreshold: { min: 1, max: MAX_CLUSTERS },
  progressDeadlineSeconds: { min: 1, max: 7 * 86_400 },
} satisfies Record<string, IntRange>);

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
