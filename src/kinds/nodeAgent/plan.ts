/**
 * Node-agent rollouts (spec/node-agents.md): a DaemonSet agent updated node by node, each node gated on the peer pods
 * it serves. The domain side: the query port the Kubernetes side implements, input validation and planning of a bump.
 * No GraphQL or Kubernetes types here.
 */
import { matchesLabelSelector, parseLabelSelector } from '../../domain/labelSelector.js';
import { AppError, ErrorCode, NotFoundError, NotImplementedError, ValidationError } from '../../errors.js';
import type { Domain } from '../../domain/Domain.js';
import { type KindPortRequest, kindPortsAcross, planAcrossClusters } from '../../domain/clusterSelection.js';
import type { DriftItem } from '../../domain/drift.js';
import { scopedKey, stagedLaunch, starterOf } from '../../domain/RolloutLauncher.js';
import { pageByKey, type KeyedPage } from '../../util/pagination.js';
import {
  DEFAULT_NODE_AGENT_MODE,
  DEFAULT_PEER_RUNTIME_CLASS,
  nodeAgentContract,
  type BumpNodeAgentImageRequest,
  type NodeAgentMode,
  type NodeAgentStrategy,
} from './contract.js';
import { STRATEGY_DEFAULTS } from '../../domain/kinds/limits.js';
import { NODE_AGENT_PULL_ALLOWANCE_SECONDS } from './limits.js';
import { isRollbackSelector, parseStoredSelector, type RolloutPlan, type RolloutStrategy } from '../../domain/kinds/index.js';
import type { LaunchResult } from '../../domain/RolloutLauncher.js';
import type { NewTarget } from '../../domain/RolloutService.js';

export {
  DEFAULT_PEER_RUNTIME_CLASS,
  type NodeAgentMode,
  type NodeAgentStrategy,
  type BumpNodeAgentImageInput,
  type BumpNodeAgentImageRequest,
} from './contract.js';

/** The agent on one node, as the `NodeAgentState` GraphQL type shows it. */
export interface NodeAgentState {
  node: string;
  podName: string | null;
  image: string | null;
  ready: boolean;
  peerPods: number;
  peerPodsReady: number;
  upToDate: boolean;
  /** SURGE: the old agent handed over and still running beside the new one. */
  retiringPod: string | null;
}

/** A DaemonSet rollplane manages as a node agent. */
export interface NodeAgentSet {
  /** The member cluster whose caches it was read from, when another than `local` (a list's `cluster`, ADR 0058). */
  cluster?: string;
  namespace: string;
  name: string;
  peerRuntimeClass: string;
  desiredImage: string;
  /** The DaemonSet's `spec.updateStrategy` as it is now (OnDelete while a rollout drives it). */
  updateStrategy: Record<string, unknown>;
  /** Ordered by node name. */
  nodes: NodeAgentState[];
  /** The rollout driving the set right now; null when none. */
  drivenBy: string | null;
  /** The strategy restored when the driving rollout ends; null when none is saved. */
  savedUpdateStrategy: Record<string, unknown> | null;
}

/** What planning a bump needs about one node running the agent. */
export interface NodeAgentCandidate {
  node: string;
  labels: Record<string, string>;
  /** The image the node's agent runs; null when the node has no agent pod right now. */
  image: string | null;
}

export interface NodeAgentCandidates {
  set: NodeAgentSet;
  nodes: NodeAgentCandidate[];
  /** SURGE hands the old agent over by taking it out of the DaemonSet's selector: needs `matchLabels`. */
  selectorHasMatchLabels: boolean;
  /** A container of the template declares a hostPort: two agents cannot share a node, so SURGE is impossible. */
  usesHostPorts: boolean;
  /** The peer runtime class annotated on the DaemonSet (`rollplane.io/peer-runtime-class`), if any. */
  annotatedPeerRuntimeClass: string | null;
  /** rollplane's configured default (`ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS`); kata-remote when not told. */
  defaultPeerRuntimeClass?: string;
  /**
   * How long the agent may take to start by its own startupProbe (initialDelaySeconds + periodSeconds ×
   * failureThreshold; the CAA chart's: 20 + 20 × 30 = 620 s); 0 when it has none.
   */
  startupBudgetSeconds?: number;
}

/** The peer runtime class the agent itself is configured with (the CAA's `RUNTIMECLASS_NAME`), and where it is set. */
export interface DeclaredRuntimeClass {
  value: string;
  /** e.g. `ConfigMap confidential-containers-system/peer-pods-cm key RUNTIMECLASS_NAME`. */
  source: string;
  /** Set when something rollplane does not read (a Secret) could override it. */
  caveat?: string;
}

export interface NodeAgentDriftItem extends DriftItem {
  kind: 'NODE_AGENT';
}

/** Implemented by ./controller from informer caches. */
export interface NodeAgentQueries {
  /** Managed sets (labelled `rollplane.io/node-agent: "true"` or configured), ordered by namespace and name. */
  listSets(): NodeAgentSet[];
  /** Any DaemonSet by name, managed or not; undefined when it does not exist. */
  getSet(namespace: string, name: string): NodeAgentSet | undefined;
  candidates(namespace: string, name: string): NodeAgentCandidates | undefined;
  /**
   * The peer runtime class the agent container is configured with (`RUNTIMECLASS_NAME` from its env / envFrom, read
   * as the kubelet builds the environment); undefined when the agent sets none. Reads the API (ConfigMaps).
   */
  agentRuntimeClass?(namespace: string, name: string): Promise<DeclaredRuntimeClass | undefined>;
  /**
   * One item per node whose agent does not run its set's template image (namespace "" and name = node), for the
   * `drift` query (the kind's module contributes it: `drift`).
   */
  driftItems(): Promise<NodeAgentDriftItem[]>;
}

/** What the driver reads back from `rollout.selector` / `rollout.strategy`. */
export interface NodeAgentSelector {
  namespace: string;
  name: string;
  canaryNodeSelector: string | null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Planning
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The plan of a bump: one target per node that runs the agent (namespace "" and name = node), canary nodes first,
 * then by node name; nodes already on the image are skipped. Strategy: one node at a time.
 */
export function planNodeAgentBump(
  input: BumpNodeAgentImageRequest,
  queries: NodeAgentQueries,
  declared?: DeclaredRuntimeClass,
): RolloutPlan<NodeAgentStrategy> {
  const canary = input.canaryNodeSelector ? parseLabelSelector(input.canaryNodeSelector, 'input.canaryNodeSelector') : undefined;

  const found = queries.candidates(input.namespace, input.name);
  if (!found) throw new NotFoundError(`DaemonSet ${input.namespace}/${input.name} not found`, { details: { namespace: input.namespace, name: input.name } });
  const mode = input.mode ?? defaultMode(found);
  const nodeDeadlineSeconds = input.nodeDeadlineSeconds ?? defaultNodeDeadline(found);
  if (mode === 'SURGE' && !found.selectorHasMatchLabels) {
    throw new ValidationError('input.mode', 'SURGE needs a DaemonSet whose selector has matchLabels (the old agent leaves the set by losing them)');
  }
  if (mode === 'SURGE' && found.usesHostPorts) {
    throw new ValidationError('input.mode', 'SURGE cannot run two agents on one node when the agent declares a hostPort; use NODE_BY_NODE');
  }
  const peerRuntimeClass = choosePeerRuntimeClass(input.peerRuntimeClass, found, declared);

  const isCanary = (n: NodeAgentCandidate) => (canary ? matchesLabelSelector(canary, n.labels) : false);
  const ordered = [...found.nodes].sort((a, b) => Number(isCanary(b)) - Number(isCanary(a)) || a.node.localeCompare(b.node));
  const targets: NewTarget[] = ordered.map((n) => ({
    namespace: '',
    name: n.node,
    fromVersion: n.image,
    toVersion: input.image,
    ...(n.image === input.image ? { skipReason: `already runs ${input.image}` } : mode === 'NODE_BY_NODE' ? { note: DELETES_FIRST } : {}),
  }));
  const changing = targets.filter((t) => !t.skipReason);
  const froms = new Set(changing.map((t) => t.fromVersion));
  const strategy: NodeAgentStrategy = {
    kind: 'NODE_AGENT',
    maxUnavailable: '1',
    maxConcurrent: 1,
    mode,
    progressDeadlineSeconds: nodeDeadlineSeconds,
    minReadySeconds: input.minReadySeconds,
    failureThreshold: input.failureThreshold,
    autoRollback: false,
    peerRuntimeClass,
    canaryNodes: ordered.filter(isCanary).length,
    daemonSetNamespace: input.namespace,
    daemonSetName: input.name,
    ...(input.analysis ? { analysis: input.analysis } : {}),
    ...(input.gate ? { gate: input.gate } : {}),
  };
  const selector: NodeAgentSelector = { namespace: input.namespace, name: input.name, canaryNodeSelector: input.canaryNodeSelector ?? null };
  return {
    kind: 'NODE_AGENT',
    fromVersion: froms.size === 1 ? [...froms][0]! : froms.size === 0 ? found.set.desiredImage : null,
    toVersion: input.image,
    selector: { ...selector },
    strategy,
    targets,
  };
}

/** What the plan says of each node NODE_BY_NODE changes. */
export const DELETES_FIRST = "deletes the node's agent first: the node has no Ready agent until the new one starts (SURGE starts it beside the old)";

/**
 * The mode when the caller names none: SURGE for a DaemonSet that updates itself by surge (the CAA chart's RollingUpdate
 * maxSurge 1, maxUnavailable 0: new beside old, never a node without a Ready agent) when SURGE can run on it (matchLabels,
 * no hostPort); NODE_BY_NODE otherwise. The strategy a driving rollout saved counts, not its OnDelete.
 */
export function defaultMode(found: NodeAgentCandidates): NodeAgentMode {
  const strategy = (found.set.savedUpdateStrategy ?? found.set.updateStrategy) as {
    type?: string;
    rollingUpdate?: { maxSurge?: unknown; maxUnavailable?: unknown };
  };
  const rolling = strategy.type === undefined || strategy.type === 'RollingUpdate';
  const zero = (v: unknown) => v === 0 || v === '0' || v === '0%';
  const surges = strategy.rollingUpdate?.maxSurge !== undefined && !zero(strategy.rollingUpdate.maxSurge);
  const byChart = rolling && surges && zero(strategy.rollingUpdate?.maxUnavailable);
  return byChart && found.selectorHasMatchLabels && !found.usesHostPorts ? 'SURGE' : DEFAULT_NODE_AGENT_MODE;
}

/** The node deadline when none is given: the agent's own startup budget plus the pull, and never under the default. */
export function defaultNodeDeadline(found: NodeAgentCandidates): number {
  return Math.max(STRATEGY_DEFAULTS.progressDeadlineSeconds, (found.startupBudgetSeconds ?? 0) + NODE_AGENT_PULL_ALLOWANCE_SECONDS);
}

/**
 * The class the gate waits on (docs/beside-upstream.md#node-agents-beside-the-cloud-api-adaptor, "Peer runtime class"):
 * 1. the agent's own `RUNTIMECLASS_NAME` (the CAA's `peer-pods-cm`), because the agent's startup probe waits on exactly
 *    those pods; an explicit input naming another class is refused (a gate on it would never see the agent's peers);
 * 2. otherwise an explicit input (anything but the schema default kata-remote);
 * 3. otherwise the DaemonSet's `rollplane.io/peer-runtime-class` annotation;
 * 4. otherwise rollplane's configured default (`ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS`, kata-remote).
 */
export function choosePeerRuntimeClass(requested: string | null | undefined, found: NodeAgentCandidates, declared: DeclaredRuntimeClass | undefined): string {
  const explicit = requested && requested !== DEFAULT_PEER_RUNTIME_CLASS ? requested : undefined;
  if (declared) {
    if (explicit !== undefined && explicit !== declared.value) {
      throw new ValidationError(
        'input.peerRuntimeClass',
        `the agent is configured for runtime class ${declared.value} (${declared.source}); a gate on ${explicit} would never see its peer pods`,
      );
    }
    return declared.value;
  }
  return explicit ?? found.annotatedPeerRuntimeClass ?? found.defaultPeerRuntimeClass ?? DEFAULT_PEER_RUNTIME_CLASS;
}

/** The `bumpNodeAgentImage` mutation: validate, plan, launch (dry run, idempotency, overlap rules). */
export async function bumpNodeAgentImage(domain: Domain, input: BumpNodeAgentImageRequest, idempotencyScope: string): Promise<LaunchResult> {
  const clusters = await kindPortsAcross(domain, input.memberClusters, NODE_AGENT_PORT);
  // Each cluster's DaemonSet planned from its own caches; one rollout has one strategy (mode, deadline), so clusters
  // whose DaemonSets would default them differently are refused by planAcrossClusters (ADR 0058).
  const plan = await planAcrossClusters(
    clusters.map((c) => c.cluster),
    async (cluster) => {
      const queries = clusters.find((c) => c.cluster === cluster)!.queries;
      return planNodeAgentBump(input, queries, await queries.agentRuntimeClass?.(input.namespace, input.name));
    },
  );
  const { cause, dryRun, ...request } = input;
  return domain.launcher.launch({
    plan,
    cause: cause ?? {},
    idempotencyKey: scopedKey(idempotencyScope, input.idempotencyKey),
    startedBy: starterOf(idempotencyScope),
    dryRun: dryRun === true,
    request,
    ...(await stagedLaunch(domain, input.waveStrategy, idempotencyScope)),
  });
}

/** How the node-agent kind reaches its query port in a cluster (src/domain/clusterSelection.ts). */
export const NODE_AGENT_PORT: KindPortRequest<NodeAgentQueries> = {
  kind: 'NODE_AGENT',
  pick: (ports) => ports.nodeAgents,
  missingLocal: () => new NotImplementedError('bumpNodeAgentImage (node agent rollouts)'),
};

/**
 * Reads a node-agent rollout's DaemonSet back: from the selector planNodeAgentBump wrote, or, for a rollback (whose
 * selector only names the rollout it reverts), from the strategy it copied.
 */
export function nodeAgentSelectorOf(rollout: { selector: unknown; strategy: RolloutStrategy }): NodeAgentSelector {
  const stored = parseStoredSelector(nodeAgentContract, rollout.selector);
  const own = stored && !isRollbackSelector(stored) ? stored : undefined;
  const copied = rollout.strategy.kind === 'NODE_AGENT' ? rollout.strategy : undefined;
  return {
    namespace: own?.namespace || (copied?.daemonSetNamespace ?? ''),
    name: own?.name || (copied?.daemonSetName ?? ''),
    canaryNodeSelector: own?.canaryNodeSelector ?? null,
  };
}

/** The strategy of a rollout the node-agent driver was handed; any other kind is a wiring mistake. */
export function nodeAgentStrategyOf(rollout: { id: string; strategy: RolloutStrategy }): NodeAgentStrategy {
  if (rollout.strategy.kind !== 'NODE_AGENT')
    throw new AppError(ErrorCode.Internal, `rollout ${rollout.id} is a ${rollout.strategy.kind} rollout, not NODE_AGENT`);
  return rollout.strategy;
}

// ---------------------------------------------------------------------------------------------------------------------
// Queries with cursor pagination
// ---------------------------------------------------------------------------------------------------------------------

/** A page of managed sets after `after` (ordered by namespace and name). */
export function pageNodeAgentSets(queries: NodeAgentQueries, first: number | null | undefined, after: string | null | undefined): KeyedPage<NodeAgentSet> {
  return pageByKey(queries.listSets(), (set) => `${set.namespace}/${set.name}`, first, after, 100);
}

declare module '../../domain/Domain.js' {
  interface KindPorts {
    /** Node-agent DaemonSets (this kind's controller caches); absent when not set up. */
    nodeAgents?: NodeAgentQueries;
  }
}
