/**
 * The VIRTUAL_CLUSTER rollout kind's contract: a target is one VirtualCluster (`namespace/name`) upgraded to a
 * ClusterVersion spec; the rollout carries the spec change in its strategy. The input is `BumpClusterVersionInput`
 * (ADR 0023). What depends on the cluster (the ClusterVersion's containers, the clusters using it) is checked when
 * planning, in `plan.ts`.
 */
import { z } from 'zod';
import { parseNamespacedName } from '../../util/dnsNames.js';
import { launchInputFields } from '../../domain/kinds/cause.js';
import {
  baseStrategyStored,
  imageReferenceInput,
  intIn,
  STRATEGY_DEFAULTS,
  targetAnalysisInput,
  targetGateInput,
  withoutUndefined,
  type BaseStrategy,
} from '../../domain/kinds/strategy.js';
import { rollbackSelectorStored } from '../../domain/kinds/strategy.js';
import type { KindContract } from '../../domain/kinds/index.js';
import { DEFAULT_MAX_CONCURRENT, MAX_CLUSTERS, VIRTUAL_CLUSTER_RANGES } from './limits.js';

export { DEFAULT_MAX_CONCURRENT, MAX_CLUSTERS, VIRTUAL_CLUSTER_RANGES } from './limits.js';

export const VIRTUAL_CLUSTER = 'VIRTUAL_CLUSTER' as const;
/**
 * What a VIRTUAL_CLUSTER rollout carries in its strategy, written at planning time: the driver applies `desiredSpec`
 * before the first admission, and a rollback (strategy copied, `rollbackOfId` set) re-applies `previousSpec`.
 */
export interface ClusterVersionChange {
  name: string;
  previousSpec: Record<string, unknown>;
  previousVersion: string;
  previousResourceVersion: string;
  desiredSpec: Record<string, unknown>;
  desiredVersion: string;
}

export interface VirtualClusterStrategy extends BaseStrategy {
  kind: typeof VIRTUAL_CLUSTER;
  maxConcurrent: number;
  /** Absent only in a row nobody planned (the driver refuses it). */
  clusterVersionChange?: ClusterVersionChange;
}

export const COMPONENTS = ['apiServer', 'controllerManager', 'etcd'] as const;
export type ComponentKey = (typeof COMPONENTS)[number];
export const ETCD_REFUSED =
  'etcd changes are refused: a partial upgrade never touches etcd (etcd reloads its certificates itself, and etcd upgrades are out of scope)';
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** `namespace/name` of a VirtualCluster, or undefined. */
export function parseClusterRef(text: string): { namespace: string; name: string } | undefined {
  return parseNamespacedName(text);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const componentChangeInput = z
  .object({
    image: imageReferenceInput.nullish(),
    args: z.array(z.string()).nullish(),
    env: z
      .array(
        z.object({
          name: z
            .string()
            .refine((name) => ENV_NAME.test(name), { error: (issue) => `"${String(issue.input).slice(0, 80)}" is not a valid environment variable name` }),
          value: z.string().nullish(),
        }),
      )
      .nullish(),
  })
  .refine((c) => c.image != null || c.args != null || c.env != null, { error: 'give at least one of image, args or env' });
export type ComponentChange = z.output<typeof componentChangeInput>;

/** A JSON merge patch of the ClusterVersion spec: an object of known components, never etcd. */
const specPatchInput = z.unknown().superRefine((patch, ctx) => {
  if (patch == null) return;
  if (!isObject(patch)) {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object (a merge patch of the ClusterVersion spec)' });
    return;
  }
  for (const key of Object.keys(patch)) {
    if (key === 'etcd') ctx.addIssue({ code: 'custom', path: [key], message: ETCD_REFUSED });
    else if (!(COMPONENTS as readonly string[]).includes(key)) {
      ctx.addIssue({ code: 'custom', path: [key], message: 'unknown component; a ClusterVersion spec has apiServer, controllerManager and etcd' });
    }
  }
});

const clustersInput = z
  .array(z.string().refine((text) => parseClusterRef(text) !== undefined, { error: (issue) => `"${String(issue.input).slice(0, 80)}" is not namespace/name` }))
  .superRefine((clusters, ctx) => {
    if (clusters.length === 0) ctx.addIssue({ code: 'custom', message: 'give at least one cluster, or omit it for every cluster using the version' });
    else if (clusters.length > MAX_CLUSTERS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_CLUSTERS} clusters` });
  });

/** `bumpClusterVersion(input:)`, validated, defaults filled in. The fields are checked in this order. */
export const bumpClusterVersionInput = z
  .object({
    clusterVersion: z.string().min(1, { error: 'is required' }),
    maxConcurrent: intIn(VIRTUAL_CLUSTER_RANGES.maxConcurrent)
      .nullish()
      .transform((v) => v ?? DEFAULT_MAX_CONCURRENT),
    maxConcurrentPerMemberCluster: intIn(VIRTUAL_CLUSTER_RANGES.maxConcurrent).nullish(),
    failureThreshold: intIn(VIRTUAL_CLUSTER_RANGES.failureThreshold)
      .nullish()
      .transform((v) => v ?? STRATEGY_DEFAULTS.failureThreshold),
    progressDeadlineSeconds: intIn(VIRTUAL_CLUSTER_RANGES.progressDeadlineSeconds)
      .nullish()
      .transform((v) => v ?? STRATEGY_DEFAULTS.progressDeadlineSeconds),
    specPatch: specPatchInput.optional(),
    apiServer: componentChangeInput.nullish(),
    controllerManager: componentChangeInput.nullish(),
    clusters: clustersInput.nullish(),
    // Analysis between clusters (ADR 0071): checked at launch by the ANALYSIS gate type, as the other kinds' is.
    analysis: targetAnalysisInput.nullish(),
    gate: targetGateInput.nullish(),
    ...launchInputFields,
  })
  .refine((input) => input.apiServer != null || input.controllerManager != null || input.specPatch != null, {
    error: 'nothing to change: give apiServer, controllerManager or specPatch',
  });
export type BumpClusterVersionInput = z.input<typeof bumpClusterVersionInput>;
export type BumpClusterVersionRequest = z.output<typeof bumpClusterVersionInput>;

/** The strategy of a planned ClusterVersion change. */
export function virtualClusterStrategy(input: BumpClusterVersionRequest, change: ClusterVersionChange): VirtualClusterStrategy {
  return {
    kind: VIRTUAL_CLUSTER,
    maxConcurrent: input.maxConcurrent,
    ...(input.maxConcurrentPerMemberCluster != null ? { maxUnavailablePerMemberCluster: String(input.maxConcurrentPerMemberCluster) } : {}),
    failureThreshold: input.failureThreshold,
    progressDeadlineSeconds: input.progressDeadlineSeconds,
    autoRollback: STRATEGY_DEFAULTS.autoRollback,
    ...(input.analysis ? { analysis: input.analysis } : {}),
    ...(input.gate ? { gate: input.gate } : {}),
    clusterVersionChange: change,
  };
}

const clusterVersionChangeStored = z.object({
  name: z.string(),
  previousSpec: z.record(z.string(), z.unknown()),
  previousVersion: z.string(),
  previousResourceVersion: z.string(),
  desiredSpec: z.record(z.string(), z.unknown()),
  desiredVersion: z.string(),
});

/** A stored VIRTUAL_CLUSTER strategy (JSON of any age) → the typed strategy with defaults. */
export const virtualClusterStrategyStored = z
  .object({
    ...baseStrategyStored,
    maxConcurrent: z.number().int().positive().catch(DEFAULT_MAX_CONCURRENT),
    clusterVersionChange: clusterVersionChangeStored.optional().catch(undefined),
  })
  .transform((s): VirtualClusterStrategy => ({ ...withoutUndefined(s), kind: VIRTUAL_CLUSTER }));

/** A stored VIRTUAL_CLUSTER selector: the ClusterVersion and the clusters the bump named (null: every one using it). */
export const virtualClusterSelectorStored = z.object({
  clusterVersion: z.string().catch(''),
  clusters: z.array(z.string()).nullable().catch(null),
});

/** The VIRTUAL_CLUSTER contract the domain reads stored rollouts with (strategy and selector schemas), carried by the kind's module. */
export const virtualClusterContract: KindContract<'VIRTUAL_CLUSTER'> = {
  kind: VIRTUAL_CLUSTER,
  strategyStored: virtualClusterStrategyStored,
  selectorStored: z.union([rollbackSelectorStored, virtualClusterSelectorStored]),
  // Its bump input has the strategy's fields at the top (no `strategy` object).
  analysisField: 'input.analysis',
  servedResources: [
    { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster' },
    { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'ClusterVersion' },
  ],
};

declare module '../../domain/kinds/index.js' {
  /** The VIRTUAL_CLUSTER kind's strategy and stored selection, as the domain types them (ADR 0045). */
  interface KindShapes {
    VIRTUAL_CLUSTER: { strategy: VirtualClusterStrategy; selector: z.output<typeof virtualClusterSelectorStored> };
  }
}
