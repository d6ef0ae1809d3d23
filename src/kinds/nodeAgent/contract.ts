/**
 * The NODE_AGENT rollout kind's contract: a target is one node (namespace "" and name = the node) whose copy of a
 * DaemonSet's agent runs the image; one node at a time, each gated on its peer pods. The input is
 * `BumpNodeAgentImageInput` (ADR 0023).
 */
import { z } from 'zod';
import { isDns1123Subdomain, isValidName } from '../../util/dnsNames.js';
import { launchInputFields } from '../../domain/kinds/cause.js';
import {
  baseStrategyStored,
  imageReferenceInput,
  intIn,
  labelSelectorInput,
  STRATEGY_DEFAULTS,
  targetAnalysisInput,
  targetGateInput,
  withoutUndefined,
  type BaseStrategy,
} from '../../domain/kinds/strategy.js';
import { rollbackSelectorStored } from '../../domain/kinds/strategy.js';
import type { KindContract } from '../../domain/kinds/index.js';
import { DEFAULT_MIN_READY_SECONDS, DEFAULT_NODE_AGENT_MODE, DEFAULT_PEER_RUNTIME_CLASS, NODE_AGENT_RANGES, type NodeAgentMode } from './limits.js';

export {
  DEFAULT_MIN_READY_SECONDS,
  DEFAULT_NODE_AGENT_MODE,
  DEFAULT_PEER_RUNTIME_CLASS,
  NODE_AGENT_RANGES,
  type NodeAgentMode,
} from './limits.js';

export const NODE_AGENT = 'NODE_AGENT' as const;
/** The planner always writes one node at a time and no automatic rollback (`planNodeAgentBump`). */
export interface NodeAgentStrategy extends BaseStrategy {
  kind: typeof NODE_AGENT;
  mode: NodeAgentMode;
  minReadySeconds: number;
  peerRuntimeClass: string;
  /** How many nodes matched the canary selector (they go first). */
  canaryNodes: number;
  /** The DaemonSet again: a rollback copies the strategy but not the selector. */
  daemonSetNamespace: string;
  daemonSetName: string;
}

const named = (message: string) => z.string().refine((value) => isValidName(isDns1123Subdomain, value), { error: message });

/** `bumpNodeAgentImage(input:)`, validated, defaults filled in. The fields are checked in this order. */
export const bumpNodeAgentImageInput = z.object({
  namespace: named('must be a Kubernetes namespace name'),
  name: named('must be a Kubernetes object name'),
  image: imageReferenceInput,
  // Both left to the planner when not given: it reads them off the DaemonSet (planNodeAgentBump).
  mode: z
    .string()
    .nullish()
    .transform((mode, ctx): NodeAgentMode | null => {
      if (mode == null) return null;
      if (mode !== 'NODE_BY_NODE' && mode !== 'SURGE') ctx.addIssue({ code: 'custom', message: `must be NODE_BY_NODE or SURGE (got ${mode})` });
      return mode as NodeAgentMode;
    }),
  nodeDeadlineSeconds: intIn(NODE_AGENT_RANGES.nodeDeadlineSeconds)
    .nullish()
    .transform((v) => v ?? null),
  minReadySeconds: intIn(NODE_AGENT_RANGES.minReadySeconds)
    .nullish()
    .transform((v) => v ?? DEFAULT_MIN_READY_SECONDS),
  failureThreshold: intIn(NODE_AGENT_RANGES.failureThreshold)
    .nullish()
    .transform((v) => v ?? STRATEGY_DEFAULTS.failureThreshold),
  canaryNodeSelector: labelSelectorInput.nullish(),
  peerRuntimeClass: named('must be a RuntimeClass name').nullish(),
  // Analysis between nodes (ADR 0071): checked at launch by the ANALYSIS gate type, as the other kinds' is.
  analysis: targetAnalysisInput.nullish(),
  gate: targetGateInput.nullish(),
  ...launchInputFields,
});
/** What a caller may send. */
export type BumpNodeAgentImageInput = z.input<typeof bumpNodeAgentImageInput>;
/** What the planner receives: the input validated, defaults filled in. */
export type BumpNodeAgentImageRequest = z.output<typeof bumpNodeAgentImageInput>;

/** A stored NODE_AGENT strategy (JSON of any age, or a rollback's copy) → the typed strategy with defaults. */
export const nodeAgentStrategyStored = z
  .object({
    ...baseStrategyStored,
    mode: z.enum(['NODE_BY_NODE', 'SURGE']).catch(DEFAULT_NODE_AGENT_MODE),
    minReadySeconds: z.number().int().nonnegative().catch(DEFAULT_MIN_READY_SECONDS),
    peerRuntimeClass: z.string().catch(DEFAULT_PEER_RUNTIME_CLASS),
    canaryNodes: z.number().int().nonnegative().catch(0),
    daemonSetNamespace: z.string().catch(''),
    daemonSetName: z.string().catch(''),
  })
  .transform((s): NodeAgentStrategy => ({ ...withoutUndefined(s), kind: NODE_AGENT }));

/** A stored NODE_AGENT selector: the DaemonSet (and the canary nodes' selector) the bump named. */
export const nodeAgentSelectorStored = z.object({
  namespace: z.string().catch(''),
  name: z.string().catch(''),
  canaryNodeSelector: z.string().nullable().catch(null),
});

/** The NODE_AGENT contract the domain reads stored rollouts with (strategy and selector schemas), carried by the kind's module. */
export const nodeAgentContract: KindContract<'NODE_AGENT'> = {
  kind: NODE_AGENT,
  strategyStored: nodeAgentStrategyStored,
  selectorStored: z.union([rollbackSelectorStored, nodeAgentSelectorStored]),
  // Its bump input has the strategy's fields at the top (no `strategy` object).
  analysisField: 'input.analysis',
  servedResources: [{ apiVersion: 'apps/v1', kind: 'DaemonSet' }],
};

declare module '../../domain/kinds/index.js' {
  /** The NODE_AGENT kind's strategy and stored selection, as the domain types them (ADR 0045). */
  interface KindShapes {
    NODE_AGENT: { strategy: NodeAgentStrategy; selector: z.output<typeof nodeAgentSelectorStored> };
  }
}
