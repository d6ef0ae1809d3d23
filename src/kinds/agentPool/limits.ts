/**
 * The AGENT_POOL contract's numbers (ADR 0023): defaults and ranges. No schema library here (only the shared limits), so
 * that the CLI checks its flags against the same numbers without loading zod; `contract.ts` builds its schemas from them.
 */
import { STRATEGY_DEFAULTS, type IntRange } from '../../domain/kinds/limits.js';

/**
 * Agent pools roll a failed rollout back by default (issue 27): beside the vm-dhcp-controller a failed image left in
 * place is the image every evicted agent comes back with. Other kinds keep the shared default.
 */
export const AGENT_POOL_STRATEGY_DEFAULTS = Object.freeze({ ...STRATEGY_DEFAULTS, autoRollback: true });

export const AGENT_POOL_RANGES = Object.freeze({
  canary: { min: 1, max: 1_000_000 },
  progressDeadlineSeconds: { min: 1, max: 86_400 },
  failureThreshold: { min: 1, max: 1_000_000 },
} satisfies Record<string, IntRange>);
