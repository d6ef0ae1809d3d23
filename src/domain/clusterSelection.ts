/**
 * Which member clusters a bump spans (issue 29): a selection of clusters beside each kind's own selection of targets
 * inside each cluster. Default: `local`, so every bump that names no cluster is what it was. Waves across clusters
 * (the next issue) order these clusters; a rollout's `maxUnavailable` is counted across all its targets, whatever
 * their cluster, because the engine counts a rollout's targets (ADR 0055).
 */
import { ValidationError } from '../errors.js';
import { LOCAL_CLUSTER } from './clusters/model.js';
import type { RolloutPlan, RolloutStrategy } from './kinds/index.js';
import { matchesLabelSelector, parseLabelSelector } from './labelSelector.js';

/** By name and/or by label selector (`tier=edge,region in (eu-west)`): the union of both. */
export interface ClusterSelection {
  names?: readonly string[];
  labelSelector?: string;
}

/** The clusters a selection names, `local` first then by name; refuses an unknown name and a selection of none. */
export function selectClusters(
  selection: ClusterSelection | undefined,
  registered: readonly { name: string; labels: Record<string, string> }[],
  field = 'input.clusters',
): string[] {
  const names = selection?.names ?? [];
  const selector = selection?.labelSelector?.trim() ?? '';
  if (names.length === 0 && selector === '') return [LOCAL_CLUSTER];
  const known = new Map(registered.map((c) => [c.name, c]));
  const chosen = new Set<string>();
  for (const name of names) {
    if (!known.has(name)) throw new ValidationError(`${field}.names`, `no member cluster named "${name}" is registered`);
    chosen.add(name);
  }
  if (selector !== '') {
    const requirements = parseLabelSelector(selector, `${field}.labelSelector`);
    for (const cluster of registered) if (matchesLabelSelector(requirements, cluster.labels)) chosen.add(cluster.name);
  }
  if (chosen.size === 0) throw new ValidationError(field, `selects no member cluster (label selector "${selector}")`);
  return [...chosen].sort((a, b) => (a === LOCAL_CLUSTER ? -1 : b === LOCAL_CLUSTER ? 1 : a.localeCompare(b)));
}

/**
 * One rollout's plan over several clusters: each cluster planned by the kind's own planner against that cluster (its
 * caches), the targets put together cluster by cluster (each naming its cluster outside `local`), in the order of
 * `clusters`. The clusters are planned at once (each reads its own caches). `fromVersion` is the clusters' common one,
 * else null (each target keeps its own); the selection and the strategy are the first cluster's (the same input).
 */
export async function planAcrossClusters<S extends RolloutStrategy>(
  clusters: readonly string[],
  planIn: (cluster: string) => Promise<RolloutPlan<S>>,
): Promise<RolloutPlan<S>> {
  if (clusters.length === 0) throw new ValidationError('input.clusters', 'selects no member cluster');
  const plans = await Promise.all(clusters.map(async (cluster) => ({ cluster, plan: await planIn(cluster) })));
  const first = plans[0]!.plan;
  const toVersions = new Set(plans.map(({ plan }) => plan.toVersion));
  if (toVersions.size > 1) throw new ValidationError('input', `the clusters would go to different versions (${[...toVersions].join(', ')})`);
  const fromVersions = new Set(plans.map(({ plan }) => plan.fromVersion));
  return {
    ...first,
    fromVersion: fromVersions.size === 1 ? first.fromVersion : null,
    targets: plans.flatMap(({ cluster, plan }) => plan.targets.map((target) => (cluster === LOCAL_CLUSTER ? target : { ...target, cluster }))),
  };
}
