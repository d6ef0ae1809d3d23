/**
 * Which member clusters a bump spans (issue 29): a selection of clusters beside each kind's own selection of targets
 * inside each cluster. Default: `local`, so every bump that names no cluster is what it was. Waves across clusters
 * (the next issue) order these clusters; a rollout's `maxUnavailable` is counted across all its targets, whatever
 * their cluster, because the engine counts a rollout's targets (ADR 0055).
 */
import { z } from 'zod';
import { type AppError, UnavailableError, ValidationError } from '../errors.js';
import { isDns1123Label, isValidName } from '../util/dnsNames.js';
import { LOCAL_CLUSTER } from './clusters/model.js';
import type { PreflightProgress } from './clusterPreflight.js';
import type { KindPorts } from './Domain.js';
import type { RolloutKind } from './events.js';
import type { RolloutPlan, RolloutStrategy } from './kinds/index.js';
import { matchesLabelSelector, parseLabelSelector } from './labelSelector.js';

/** By name and/or by label selector (`tier=edge,region in (eu-west)`): the union of both. */
export interface ClusterSelection {
  names?: readonly string[];
  labelSelector?: string;
}

/** The most member clusters a selection may name (each is a DNS-1123 label). */
export const MAX_SELECTED_CLUSTER_NAMES = 1000;

/**
 * A bump's `memberClusters` (`MemberClusterSelectorInput`), validated: names are DNS-1123 labels, the label selector
 * parses. Absent, or empty, is `local` (selectClusters); it is then left out of the request, so the request a retry is
 * compared with (idempotency) is what it was before clusters.
 */
export const memberClusterSelectionInput = z
  .object({
    names: z
      .array(
        z.string().refine((name) => isValidName(isDns1123Label, name), { error: (issue) => `"${String(issue.input).slice(0, 80)}" is not a cluster name` }),
      )
      .max(MAX_SELECTED_CLUSTER_NAMES)
      .nullish(),
    labelSelector: z
      .string()
      .superRefine((value, ctx) => {
        try {
          if (value.trim() !== '') parseLabelSelector(value, 'labelSelector');
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message.replace(/^labelSelector: /, '') });
        }
      })
      .nullish(),
  })
  .nullish()
  .transform((s): ClusterSelection | undefined => {
    const names = s?.names?.length ? [...new Set(s.names)].sort() : undefined;
    const labelSelector = s?.labelSelector?.trim() ? s.labelSelector.trim() : undefined;
    return names || labelSelector ? { ...(names ? { names } : {}), ...(labelSelector ? { labelSelector } : {}) } : undefined;
  });

/** The refusal of a cluster name nobody registered (BAD_USER_INPUT on `field`). */
export function notRegistered(name: string, field: string): ValidationError {
  return new ValidationError(field, `no member cluster named "${name}" is registered`);
}

/** The clusters a selection names, `local` first then by name; refuses an unknown name and a selection of none. */
export function selectClusters(
  selection: ClusterSelection | undefined,
  registered: readonly { name: string; labels: Record<string, string> }[],
  field = 'input.clusters',
  namesField = `${field}.names`,
): string[] {
  const names = selection?.names ?? [];
  const selector = selection?.labelSelector?.trim() ?? '';
  if (names.length === 0 && selector === '') return [LOCAL_CLUSTER];
  const known = new Map(registered.map((c) => [c.name, c]));
  const chosen = new Set<string>();
  for (const name of names) {
    if (!known.has(name)) throw notRegistered(name, namesField);
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
  if (toVersions.size > 1) throw new ValidationError('input.memberClusters', `the clusters would go to different versions (${[...toVersions].join(', ')})`);
  // One rollout has one strategy: a kind whose strategy carries what it read in a cluster (a ClusterVersion's
  // resourceVersion, a DaemonSet's derived defaults) cannot take one cluster's for another's.
  const strategyOf = (plan: RolloutPlan<S>) => canonical(plan.strategy);
  const differing = plans.find(({ plan }) => strategyOf(plan) !== strategyOf(first));
  if (differing) {
    const fields = fieldsThatDiffer(first.strategy, differing.plan.strategy);
    throw new ValidationError(
      'input.memberClusters',
      `${plans[0]!.cluster} and ${differing.cluster} would need different strategies (${fields.join(', ')} differ), and one rollout has one: bump them one at a time, or give those fields explicitly where they are inputs`,
      { details: { clusters: [plans[0]!.cluster, differing.cluster], fields } },
    );
  }
  const fromVersions = new Set(plans.map(({ plan }) => plan.fromVersion));
  return {
    ...first,
    fromVersion: fromVersions.size === 1 ? first.fromVersion : null,
    targets: plans.flatMap(({ cluster, plan }) => plan.targets.map((target) => (cluster === LOCAL_CLUSTER ? target : { ...target, cluster }))),
  };
}

/** The top-level fields two objects disagree on, by content. */
function fieldsThatDiffer(a: object, b: object): string[] {
  const left = new Map(Object.entries(a));
  const right = new Map(Object.entries(b));
  return [...new Set([...left.keys(), ...right.keys()])].filter((key) => canonical(left.get(key)) !== canonical(right.get(key)));
}

/** JSON with sorted keys: strategies compared by content. */
function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
        : v,
    ) ?? 'undefined'
  );
}

/**
 * The one seam through which planning reaches a cluster (docs/adr/0058-bump-across-clusters.md): the registered
 * clusters a selection picks from, and the kinds' query ports answering for a cluster on this replica — `local`'s own,
 * or a member's runtime caches (src/clusters/MemberRuntimes.ts). Set by the composition root; when member caches are
 * shared across replicas (shards), only this changes.
 */
export interface ClusterPorts {
  /** The registered clusters with their labels. */
  registered(): Promise<readonly { name: string; labels: Record<string, string> }[]>;
  /**
   * The kinds' query ports answering for `cluster` here, or why there are none (not registered, not READY, syncing).
   * `notServed`: why the cluster does not serve the kind, when not for the usual reason (discovery found none of its
   * resources), e.g. its list answers 404 (docs/adr/0066-member-kind-caches.md).
   */
  portsOf(cluster: string, kind: RolloutKind): { ports: Partial<KindPorts>; notServed?: string } | { unavailable: string };
  /** Hears how far a long preflight across clusters got (the composition root logs it; clusterPreflight.ts). */
  preflightProgress?(progress: PreflightProgress): void;
}

/** What a kind asks of the seam: its field of the ports, and its own refusal when `local` has none (NOT_IMPLEMENTED). */
export interface KindPortRequest<Q> {
  kind: RolloutKind;
  pick(ports: Partial<KindPorts>): Q | undefined;
  missingLocal(): AppError;
}

/** Where a Domain's cluster seam is: the composition root's, else `local` alone (a Domain built by hand in a test). */
type WithClusterPorts = Partial<KindPorts> & { clusterPorts?: ClusterPorts | undefined };

export function portsHere(domain: WithClusterPorts): ClusterPorts {
  return (
    domain.clusterPorts ?? {
      registered: async () => [{ name: LOCAL_CLUSTER, labels: {} }],
      portsOf: (cluster) => (cluster === LOCAL_CLUSTER ? { ports: domain } : { unavailable: `member cluster ${cluster} is not driven by this rollplane` }),
    }
  );
}

/** One selected cluster and the kind's query port there. */
export interface ClusterQueries<Q> {
  cluster: string;
  queries: Q;
}

/**
 * The clusters a bump's selection names, each with the kind's query port there, `local` first then by name. Refuses
 * (and so changes nothing): an unknown name, a selector matching no cluster, a cluster named that does not serve the
 * kind (BAD_USER_INPUT); a selected cluster whose caches this replica does not have now (UNAVAILABLE, naming it and its
 * health). A cluster picked by the label selector alone that does not serve the kind is left out (a selector like
 * `tier=edge` may cover clusters without IPPools); if none is left, BAD_USER_INPUT.
 */
export async function kindPortsAcross<Q>(
  domain: WithClusterPorts,
  selection: ClusterSelection | undefined,
  request: KindPortRequest<Q>,
  field = 'input.memberClusters',
): Promise<ClusterQueries<Q>[]> {
  return portsAcross(domain, selection, request, { field, namesField: `${field}.names`, cannot: 'cannot plan in every selected cluster' });
}

async function portsAcross<Q>(
  domain: WithClusterPorts,
  selection: ClusterSelection | undefined,
  request: KindPortRequest<Q>,
  words: { field: string; namesField: string; cannot: string },
): Promise<ClusterQueries<Q>[]> {
  const { field, namesField } = words;
  const seam = portsHere(domain);
  const clusters = selection ? selectClusters(selection, await seam.registered(), field, namesField) : [LOCAL_CLUSTER];
  const named = new Set(selection?.names ?? (selection ? [] : [LOCAL_CLUSTER]));
  const found: ClusterQueries<Q>[] = [];
  const unavailable: { cluster: string; why: string }[] = [];
  for (const cluster of clusters) {
    const answer = seam.portsOf(cluster, request.kind);
    if ('unavailable' in answer) {
      unavailable.push({ cluster, why: answer.unavailable });
      continue;
    }
    const queries = request.pick(answer.ports);
    if (queries) found.push({ cluster, queries });
    else if (cluster === LOCAL_CLUSTER && named.has(cluster)) throw request.missingLocal();
    else if (named.has(cluster))
      throw new ValidationError(
        namesField,
        `member cluster ${cluster} does not serve ${request.kind} (${'notServed' in answer && answer.notServed ? answer.notServed : 'its discovery found no such resources'})`,
      );
  }
  if (unavailable.length > 0) {
    throw new UnavailableError(`${words.cannot}: ${unavailable.map((u) => u.why).join('; ')}`, {
      details: { clusters: unavailable.map((u) => u.cluster) },
    });
  }
  if (found.length === 0) throw new ValidationError(field, `selects no member cluster that serves ${request.kind}`);
  return found;
}

/**
 * The kind's query port for one cluster (a list's `cluster` argument): `local` when none is named. An unregistered
 * name is BAD_USER_INPUT, a cluster whose caches this replica does not have now UNAVAILABLE, one that does not serve
 * the kind BAD_USER_INPUT — the same rules as a bump's selection of one name.
 */
export async function kindPortIn<Q>(domain: WithClusterPorts, cluster: string | null | undefined, request: KindPortRequest<Q>, field = 'cluster'): Promise<Q> {
  if (cluster == null || cluster === LOCAL_CLUSTER) {
    const local = portsHere(domain).portsOf(LOCAL_CLUSTER, request.kind);
    const queries = 'ports' in local ? request.pick(local.ports) : undefined;
    if (!queries) throw request.missingLocal();
    return queries;
  }
  // A read names one cluster in a plain argument: its errors say `cluster`, not `cluster.names`, and "read", not "plan"
  // (attack 16, G7).
  const [only] = await portsAcross(domain, { names: [cluster] }, request, { field, namesField: field, cannot: `cannot read ${request.kind}` });
  return only!.queries;
}
