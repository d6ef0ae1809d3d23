/**
 * Agent pools in the domain's terms: what the API can ask about IPPools and their DHCP agents, and how a bump of the
 * agent image becomes a rollout plan. No GraphQL or Kubernetes types here; `./controller` implements
 * `AgentPoolQueries` from its informer caches.
 */
import { matchesLabelSelector, parseLabelSelector, type Requirement } from '../../domain/labelSelector.js';
import { ConflictError, NotImplementedError, ValidationError } from '../../errors.js';
import { preflightAcrossClusters, refusedIn } from '../../domain/clusterPreflight.js';
import { type KindPortRequest, kindPortsAcross, planAcrossClusters } from '../../domain/clusterSelection.js';
import type { Domain } from '../../domain/Domain.js';
import type { DriftItem } from '../../domain/drift.js';
import { scopedKey, stagedLaunch, starterOf } from '../../domain/RolloutLauncher.js';
import { isDowngrade } from '../../util/imageReference.js';
import { pageByKey, type KeyedPage } from '../../util/pagination.js';
import type { RolloutPlan } from '../../domain/kinds/index.js';
import type { AgentPoolStrategy, BumpAgentImageRequest } from './contract.js';
import type { LaunchResult } from '../../domain/RolloutLauncher.js';
import { busyRolloutName, type LaunchGuard, type RollbackRules } from '../../domain/launchRules.js';
import { clusterOf } from '../../domain/ports.js';
import type { NewTarget } from '../../domain/RolloutService.js';
import { toVersionText } from '../../domain/toVersionText.js';

export interface PoolCondition {
  type: string;
  status: string;
  reason: string | null;
  message: string | null;
  lastUpdateTime: Date | null;
}

/** One IPPool and its agent, as the API shows it. */
export interface AgentPoolView {
  /** The member cluster whose caches it was read from, when another than `local` (a list's `cluster`, ADR 0058). */
  cluster?: string;
  namespace: string;
  name: string;
  labels: Record<string, string>;
  networkName: string;
  cidr: string | null;
  paused: boolean;
  /** Held by someone other than rollplane (a rollout skips it). */
  held: boolean;
  /** Held by a rollplane rollout in coexistence mode (released by the rollout that targets it). */
  heldByRollplane: boolean;
  /** COEXIST: the vm-dhcp-controller deploys the agent (desired = its --image); DIRECT: rollplane does. */
  mode: 'COEXIST' | 'DIRECT';
  /**
   * The image the pool should run: the last rollout's decision for it (agentPoolChoices.ts) when the history has one,
   * else what the cluster asks for (the vm-dhcp-controller's --image beside it, else status.agentPodRef.image).
   */
  desiredImage: string | null;
  /** The rollout whose decision `desiredImage` is; null when it is the cluster's. */
  desiredBy: string | null;
  /** The image the pool's status records (`status.agentPodRef.image`): what planning moves a pool from. */
  recordedImage: string | null;
  runningImage: string | null;
  /**
   * The image the pool's agent would get if it were recreated now (evicted, drained, deleted): beside the controller its
   * --image, held or not (upstream's DeployAgent ignores the hold when it creates); in direct mode the recorded one.
   */
  recreatedWith: string | null;
  /** `recreatedWith` when it is neither what the pool runs nor what was decided for it: an image nobody chose. */
  exposedTo: string | null;
  agentRef: string | null;
  agentUid: string | null;
  agentReady: boolean;
  conditions: PoolCondition[];
  /** When the current drift was first seen (the pool's lastUpdate at best); null when unknown. */
  driftSince: Date | null;
}

/** The cluster side of agent pools (informer caches), implemented by the agent-pool controllers. */
export interface AgentPoolQueries {
  /** Every pool, in any order. */
  all(): Promise<AgentPoolView[]>;
  get(namespace: string, name: string): Promise<AgentPoolView | undefined>;
  /** The mode a rollout would run in now; throws the refusal (an AppError with a code) when the cluster allows none. */
  checkRollout(): Promise<'COEXIST' | 'DIRECT'>;
  /**
   * The image a rollout to `image` deploys, as the agents will run it (beside the vm-dhcp-controller: as its release
   * parses `--image`, e.g. no tag → `:latest`); throws BAD_USER_INPUT for an image that release cannot parse.
   */
  admitImage?(image: string): Promise<string>;
  /**
   * Dry-runs the first writes of a rollout to `image` of `targets` (holds, the controller's image, or one agent's
   * creation); throws the refusal (CONFLICT or UNAVAILABLE, `reason: PREFLIGHT_REFUSED`, naming what was refused).
   */
  preflight?(image: string, targets: readonly { namespace: string; name: string }[]): Promise<void>;
}

export interface AgentPoolFilter {
  namespace?: string | null;
  labelSelector?: string | null;
  drifted?: boolean | null;
}

// -------------------------------------------------------------------------------------------------------------------
// Pool selection (bumpAgentImage `pools`, stored as the rollout's selector)

export interface PoolSelection {
  namespaces?: string[] | null;
  /** `namespace/name` or `name` (any namespace). */
  names?: string[] | null;
  labelSelector?: string | null;
}

export function matchesPoolSelection(
  selection: PoolSelection | null | undefined,
  pool: { namespace: string; name: string; labels: Record<string, string> },
): boolean {
  if (!selection) return true;
  if (selection.namespaces?.length && !selection.namespaces.includes(pool.namespace)) return false;
  if (selection.names?.length && !selection.names.some((n) => (n.includes('/') ? n === `${pool.namespace}/${pool.name}` : n === pool.name))) return false;
  if (selection.labelSelector) {
    let requirements: Requirement[];
    try {
      requirements = parseLabelSelector(selection.labelSelector, 'selector.labelSelector');
    } catch {
      return false;
    }
    if (!matchesLabelSelector(requirements, pool.labels)) return false;
  }
  return true;
}

// -------------------------------------------------------------------------------------------------------------------
// Queries

const sortKey = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

export function isDrifted(pool: AgentPoolView): boolean {
  return pool.desiredImage !== null && pool.runningImage !== pool.desiredImage;
}

/** Pools ordered by namespace and name, filtered, one page. */
export async function listAgentPools(
  queries: AgentPoolQueries,
  filter: AgentPoolFilter | null | undefined,
  first?: number | null,
  after?: string | null,
): Promise<KeyedPage<AgentPoolView>> {
  const requirements = filter?.labelSelector ? parseLabelSelector(filter.labelSelector, 'filter.labelSelector') : [];
  const pools = (await queries.all()).filter(
    (p) =>
      (!filter?.namespace || p.namespace === filter.namespace) &&
      matchesLabelSelector(requirements, p.labels) &&
      (filter?.drifted === null || filter?.drifted === undefined || isDrifted(p) === filter.drifted),
  );
  return pageByKey(pools, sortKey, first, after, 100);
}

export interface AgentPoolDriftItem extends DriftItem {
  kind: 'AGENT_POOL';
  /** The rollout whose decision is the desired version (null: the cluster's). */
  desiredBy: string | null;
}

/** Pools whose agent runs something else than their desired image. */
export async function agentPoolDrift(queries: AgentPoolQueries): Promise<AgentPoolDriftItem[]> {
  return (await queries.all()).filter(isDrifted).map((p) => ({
    kind: 'AGENT_POOL' as const,
    namespace: p.namespace,
    name: p.name,
    desiredVersion: p.desiredImage,
    runningVersion: p.runningImage,
    since: p.driftSince,
    desiredBy: p.desiredBy,
  }));
}

// -------------------------------------------------------------------------------------------------------------------
// bumpAgentImage

/** What `bumpAgentImage` takes: the input as the agent-pool contract validated it (`bumpAgentImageInput`). */
export type { BumpAgentImageRequest } from './contract.js';

/** How the agent-pool kind reaches its query port in a cluster (src/domain/clusterSelection.ts). */
export const AGENT_POOL_PORT: KindPortRequest<AgentPoolQueries> = {
  kind: 'AGENT_POOL',
  pick: (ports) => ports.agentPools,
  missingLocal: () => new NotImplementedError('agent pools (no agent-pool controller runs in this rollplane)'),
};

/** One cluster's part of a bump: its targets, the mode its pools run in there, and the image as that cluster admits it. */
interface ClusterPart {
  cluster: string;
  queries: AgentPoolQueries;
  mode: 'COEXIST' | 'DIRECT';
  image: string;
  plan: RolloutPlan<AgentPoolStrategy>;
}

/**
 * Plans a new agent image for the selected pools and launches it. Held (hold annotation) and paused pools are skipped
 * with their reason, as are pools already on the image; a semver downgrade of any changing pool is refused unless
 * `allowDowngrade`. Across member clusters (`memberClusters`, ADR 0058) each cluster is planned from its own caches
 * with its own checks (mode, image admission, preflight); a selection of pools that matches nothing in one cluster
 * leaves it out, and nothing at all is BAD_USER_INPUT. Dry runs, idempotency keys and overlap rules are the launcher's.
 */
export async function bumpAgentImage(
  domain: Pick<Domain, 'launcher' | 'clusterPorts' | 'agentPools'>,
  input: BumpAgentImageRequest,
  idempotencyScope: string,
): Promise<LaunchResult> {
  const { pools: selection, strategy } = input;
  const clusters = await kindPortsAcross(domain, input.memberClusters, AGENT_POOL_PORT);
  const parts = await Promise.all(clusters.map(({ cluster, queries }) => planInCluster(cluster, queries, input)));
  const planned = parts.filter((part) => part.plan.targets.length > 0);
  if (planned.length === 0)
    throw new ValidationError('input.pools', clusters.length > 1 ? 'selects no IPPool in any selected member cluster' : 'selects no IPPool');
  const byCluster = new Map(planned.map((part) => [part.cluster, part]));
  const plan = await planAcrossClusters<AgentPoolStrategy>(
    planned.map((part) => part.cluster),
    async (cluster) => byCluster.get(cluster)!.plan,
  );
  // The clusters admitted the same image (planAcrossClusters refuses different ones).
  const image = planned[0]!.image;
  const changing = plan.targets.filter((t) => !t.skipReason);
  if (!input.allowDowngrade) {
    const downgrade = changing.find((t) => t.fromVersion && safeIsDowngrade(t.fromVersion, image));
    if (downgrade) {
      throw new ValidationError(
        'input.image',
        `${image} is a downgrade of ${downgrade.fromVersion} (pool ${downgrade.cluster ? `${downgrade.cluster}:` : ''}${downgrade.namespace}/${downgrade.name}); pass allowDowngrade: true to do it anyway`,
      );
    }
  }
  // Before anything is written (dry runs included: they say whether the rollout could start): what the rollout writes
  // first must be admitted in each cluster — every hold, the controller's image, or an agent's creation (issue 27).
  // Each cluster on its own connection, so a bounded number at once, and every refusing cluster named (issue 29: over
  // 1,000 members one after another took 67 s, and one reset refused the bump).
  await preflightAcrossClusters(
    planned,
    async (part) => {
      const own = part.plan.targets.filter((t) => !t.skipReason);
      if (own.length > 0) await part.queries.preflight?.(image, own).catch((error: unknown) => refusedIn(part.cluster, error));
    },
    { onProgress: domain.clusterPorts?.preflightProgress?.bind(domain.clusterPorts) },
  );
  const fromVersions = new Set(changing.map((t) => t.fromVersion));
  const coexisting = planned.filter((part) => part.mode === 'COEXIST').map((part) => part.cluster);
  const { cause: _cause, dryRun: _dryRun, ...request } = input;
  return domain.launcher.launch({
    plan: { ...plan, fromVersion: fromVersions.size === 1 ? [...fromVersions][0]! : null, selector: selection, strategy },
    cause: input.cause ?? {},
    idempotencyKey: scopedKey(idempotencyScope, input.idempotencyKey),
    startedBy: starterOf(idempotencyScope),
    dryRun: input.dryRun === true,
    supersede: input.supersede === true,
    request,
    // The one-image rule holds in each cluster beside the vm-dhcp-controller (ADR 0058: a mix of modes), not elsewhere.
    ...(coexisting.length > 0 ? { guard: refuseOtherControllerImage(image, coexisting) } : {}),
    ...(await stagedLaunch(domain, input.waveStrategy, idempotencyScope)),
  });
}

/** One cluster's pools planned from its own caches, with its own refusals (mode, image admission). */
async function planInCluster(cluster: string, queries: AgentPoolQueries, input: BumpAgentImageRequest): Promise<ClusterPart> {
  // Refuse before planning when the cluster does not allow the configured mode (e.g. direct beside the controller).
  const mode = await queries.checkRollout();
  // The image as the agents will run it (beside the controller: as its release parses --image).
  const image = queries.admitImage ? await queries.admitImage(input.image) : input.image;
  const pools = (await queries.all())
    .filter((p) => matchesPoolSelection(input.pools, p))
    .sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0));
  const targets: NewTarget[] = pools.map((p) => {
    // Planned from the cluster, not from what rollouts decided (desiredImage): beside the controller a pool moves from
    // what it runs; in direct mode from the image its status records.
    const recorded = p.recordedImage ?? p.desiredImage;
    const from = p.mode === 'COEXIST' ? (p.runningImage ?? recorded) : recorded;
    const skipReason = p.held
      ? 'held: network.harvesterhci.io/hold-ippool-agent-upgrade'
      : p.paused
        ? 'paused: spec.paused is true'
        : recorded === image && p.runningImage === image
          ? 'already current'
          : undefined;
    return { namespace: p.namespace, name: p.name, fromVersion: from, toVersion: image, ...(skipReason ? { skipReason } : {}) };
  });
  return {
    cluster,
    queries,
    mode,
    image,
    plan: { kind: 'AGENT_POOL', fromVersion: null, toVersion: image, selector: input.pools, strategy: input.strategy, targets },
  };
}

/**
 * The agent-pool kind's say in a rollback. Beside the vm-dhcp-controller a rollback moves its one `--image` like a bump
 * does, so it takes the same guard; and a rollback whose pools would return to different images cannot run there at
 * all (attack finding F7: it was accepted, aborted the original and then stayed PENDING, the reason only in the log).
 * Other kinds, and direct mode, have nothing to add.
 */
export function agentPoolRollbackRules(queries: Pick<AgentPoolQueries, 'checkRollout' | 'preflight'> | undefined): RollbackRules {
  return async (original, targets, everyTarget = targets) => {
    if (original.kind !== 'AGENT_POOL' || !queries || (await queries.checkRollout()) !== 'COEXIST') return {};
    // Across every cluster of the rollback: its one toVersion is the --image it gives each controller it moves.
    const images = [...new Set(everyTarget.map((t) => t.toVersion))].sort();
    if (images.length > 1) {
      throw new ConflictError(
        `rollout ${original.id} changed pools that ran different images before (${images.join(', ')}); the vm-dhcp-controller deploys one --image, so a rollback cannot return each pool to its own: bump each group back with bumpAgentImage`,
        { details: { rolloutId: original.id, images } },
      );
    }
    if (images[0] && targets.length > 0) await queries.preflight?.(images[0], targets);
    // The rollback takes its original's work over (it is aborted first, its admitted pools may still be moving). It
    // moves the controller's --image in each cluster its pools are in.
    const clusters = [...new Set(targets.map(clusterOf))];
    return images[0] ? { guard: refuseOtherControllerImage(images[0], clusters, original.id) } : {};
  };
}

/**
 * Beside the vm-dhcp-controller every pool's agent runs the controller's one `--image`: a rollout moves it for all the
 * pools it releases in that cluster. A second active rollout to another image, even of other pools, would move it under
 * the first one, which then sees its image changed behind its back and fails (attack finding: two bumps of disjoint
 * pools broke each other). Refused as CONFLICT under the launch lock when the busy rollout has a target in one of the
 * `clusters` whose controller this launch moves (any target: a pool it moved runs the image it moved the controller to,
 * so it owns that cluster's --image until it ends); rollouts to the same image, and rollouts in other clusters (each its
 * own controller, issue 29 O1), run together.
 */
function refuseOtherControllerImage(image: string, clusters: readonly string[], takingOver?: string): LaunchGuard {
  return (busy, { superseding }) => {
    for (const other of busy) {
      // A superseded rollout is aborted in this launch's transaction; this launch moves the controller from then on.
      if (other.toVersion === image || other.id === takingOver || superseding.has(other.id)) continue;
      const cluster = clusters.find((c) => other.clusters.has(c));
      if (cluster === undefined) continue;
      throw new ConflictError(
        `in cluster ${cluster} the vm-dhcp-controller runs one --image for every pool, and ${busyRolloutName(other)} is moving it to ${toVersionText(other.toVersion)}; wait for it, or abort it first`,
        { details: { rolloutIds: [other.id], cluster } },
      );
    }
  };
}

function safeIsDowngrade(from: string, to: string): boolean {
  try {
    return isDowngrade(from, to);
  } catch {
    return false; // an unparsable recorded image cannot be compared
  }
}

declare module '../../domain/Domain.js' {
  interface KindPorts {
    /** IPPools and their DHCP agents (cluster state from the agent-pool controllers' caches); absent when not set up. */
    agentPools?: AgentPoolQueries;
  }
}
