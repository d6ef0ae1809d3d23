/**
 * The VIRTUAL_CLUSTER contract's numbers (ADR 0023): defaults and ranges. No schema library here (only the shared limits), so
 * that the CLI checks its flags against the same numbers without loading zod; `contract.ts` builds its schemas from them.
 */
import type { IntRange } from '../../domain/kinds/limits.js';

/** Clusters upgrading at once, unless told. */
export const DEFAULT_MAX_CONCURRENT = 1;
export const MAX_CLUSTERS = 10_000;
export const VIRTUAL_CLUSTER_RANGES = Object.freeze({
  maxConcurrent: { min: 1, max: 1000 },
  failureThreshold: { min: 1, max: MAX_CLUSTERS },
  progressDeadlineSeconds: { min: 1, max: 7 * 86_400 },
} satisfies Record<string, IntRange>);
