/**
 * The AGENT_POOL rollout kind's contract: a target is one IPPool (`namespace/name`) whose DHCP agent runs the image;
 * the input is `BumpAgentImageInput`; the strategy is the shared one (ADR 0023).
 */
import { z } from 'zod';
import { isDns1123Label, isDns1123Subdomain, isValidName, parseNamespacedName } from '../../util/dnsNames.js';
import { launchInputFields } from '../../domain/kinds/cause.js';
import {
  baseStrategyStored,
  labelSelectorInput,
  imageReferenceInput,
  intIn,
  maxUnavailableInput,
  normalizeMaxUnavailable,
  STRATEGY_DEFAULTS,
  targetAnalysisInput,
  targetGateInput,
  withoutUndefined,
  type BaseStrategy,
} from '../../domain/kinds/strategy.js';
import { rollbackSelectorStored } from '../../domain/kinds/strategy.js';
import type { KindContract } from '../../domain/kinds/index.js';
import { AGENT_POOL_RANGES, AGENT_POOL_STRATEGY_DEFAULTS } from './limits.js';

export { AGENT_POOL_RANGES } from './limits.js';

export const AGENT_POOL = 'AGENT_POOL' as const;

export interface AgentPoolStrategy extends BaseStrategy {
  kind: typeof AGENT_POOL;
}

function poolName(name: string): boolean {
  return name.includes('/') ? parseNamespacedName(name) !== undefined : isValidName(isDns1123Subdomain, name);
}

/** Which pools (`pools`), stored as the rollout's selector; empty lists and an empty selector mean "no condition". */
export const poolSelectionInput = z
  .object({
    namespaces: z
      .array(
        z.string().refine((ns) => isValidName(isDns1123Label, ns), { error: (issue) => `"${String(issue.input).slice(0, 80)}" is not a valid namespace name` }),
      )
      .nullish(),
    names: z.array(z.string().refine(poolName, { error: (issue) => `"${String(issue.input).slice(0, 80)}" must be "namespace/name" or "name"` })).nullish(),
    labelSelector: labelSelectorInput.nullish(),
  })
  .transform((s) => ({
    ...(s.namespaces?.length ? { namespaces: [...s.namespaces] } : {}),
    ...(s.names?.length ? { names: [...s.names] } : {}),
    ...(s.labelSelector ? { labelSelector: s.labelSelector } : {}),
  }));
export type PoolSelection = z.output<typeof poolSelectionInput>;

/** `AgentRolloutStrategyInput` → the stored strategy, every default filled in here. */
export const agentPoolStrategyInput = z
  .object({
    maxUnavailable: maxUnavailableInput.nullish(),
    maxUnavailablePerMemberCluster: maxUnavailableInput.nullish(),
    canary: intIn(AGENT_POOL_RANGES.canary).nullish(),
    progressDeadlineSeconds: intIn(AGENT_POOL_RANGES.progressDeadlineSeconds).nullish(),
    failureThreshold: intIn(AGENT_POOL_RANGES.failureThreshold).nullish(),
    autoRollback: z.boolean().nullish(),
    analysis: targetAnalysisInput.nullish(),
    gate: targetGateInput.nullish(),
  })
  .nullish()
  .transform(
    (s): AgentPoolStrategy => ({
      kind: AGENT_POOL,
      maxUnavailable: normalizeMaxUnavailable(s?.maxUnavailable ?? STRATEGY_DEFAULTS.maxUnavailable) ?? STRATEGY_DEFAULTS.maxUnavailable,
      ...(s?.maxUnavailablePerMemberCluster != null ? { maxUnavailablePerMemberCluster: normalizeMaxUnavailable(s.maxUnavailablePerMemberCluster) } : {}),
      ...(s?.canary != null ? { canary: s.canary } : {}),
      progressDeadlineSeconds: s?.progressDeadlineSeconds ?? STRATEGY_DEFAULTS.progressDeadlineSeconds,
      failureThreshold: s?.failureThreshold ?? STRATEGY_DEFAULTS.failureThreshold,
      // On unless the caller turns it off (issue 27): a failed rollout returns to the last good image by itself, as
      // Argo Rollouts and Flagger do; beside the vm-dhcp-controller a failed image left in place is every pool's next.
      autoRollback: s?.autoRollback ?? AGENT_POOL_STRATEGY_DEFAULTS.autoRollback,
      ...(s?.analysis ? { analysis: s.analysis } : {}),
      ...(s?.gate ? { gate: s.gate } : {}),
    }),
  );

/** `bumpAgentImage(input:)`, validated; the image is trimmed (a pasted reference often ends in a newline). */
export const bumpAgentImageInput = z.object({
  image: z.string().trim().pipe(imageReferenceInput),
  pools: poolSelectionInput.nullish().transform((s) => s ?? {}),
  strategy: agentPoolStrategyInput,
  ...launchInputFields,
  allowDowngrade: z.boolean().nullish(),
  supersede: z.boolean().nullish(),
});
export type BumpAgentImageInput = z.input<typeof bumpAgentImageInput>;
export type BumpAgentImageRequest = z.output<typeof bumpAgentImageInput>;

/** A stored AGENT_POOL strategy (JSON of any age) → the typed strategy with defaults. */
export const agentPoolStrategyStored = z.object(baseStrategyStored).transform((s): AgentPoolStrategy => ({ kind: AGENT_POOL, ...withoutUndefined(s) }));

/** A stored AGENT_POOL selector: the pool selection as given (`bumpAgentImage(input: { pools })`). */
export const agentPoolSelectorStored = z.object({
  namespaces: z.array(z.string()).optional().catch(undefined),
  names: z.array(z.string()).optional().catch(undefined),
  labelSelector: z.string().optional().catch(undefined),
});

/** The AGENT_POOL contract the domain reads stored rollouts with (strategy and selector schemas), carried by the kind's module. */
export const agentPoolContract: KindContract<'AGENT_POOL'> = {
  kind: AGENT_POOL,
  strategyStored: agentPoolStrategyStored,
  selectorStored: z.union([rollbackSelectorStored, agentPoolSelectorStored]),
  // bumpAgentImage's input has `supersede` (bumpAgentImageInput).
  offersSupersede: true,
  analysisField: 'input.strategy.analysis',
  servedResources: [{ apiVersion: 'network.harvesterhci.io/v1alpha1', kind: 'IPPool' }],
};

declare module '../../domain/kinds/index.js' {
  /** The AGENT_POOL kind's strategy and stored selection, as the domain types them (ADR 0045). */
  interface KindShapes {
    AGENT_POOL: { strategy: AgentPoolStrategy; selector: z.output<typeof agentPoolSelectorStored> };
  }
}
