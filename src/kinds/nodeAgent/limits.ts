/**
 * The NODE_AGENT contract's numbers (ADR 0023): defaults and ranges. No schema library here (only the shared limits), so
 * that the CLI checks its flags against the same numbers without loading zod; `contract.ts` builds its schemas from them.
 */
import type { IntRange } from '../../domain/kinds/limits.js';

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
