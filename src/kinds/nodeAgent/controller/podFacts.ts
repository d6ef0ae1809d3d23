/** What rollplane reads from agent and peer pods. Pure functions over client-node objects. */
import type { V1DaemonSet, V1Node, V1Pod } from '@kubernetes/client-node';
import { AGENT_CONTAINER_ANNOTATION, PEER_PODS_READY, RETIRING_LABEL } from './names.js';

export function isTerminating(pod: V1Pod): boolean {
  return Boolean(pod.metadata?.deletionTimestamp);
}

/** Not being deleted and not finished. */
export function isActive(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return !isTerminating(pod) && phase !== 'Succeeded' && phase !== 'Failed';
}

export function condition(pod: V1Pod, type: string) {
  return (pod.status?.conditions ?? []).find((c) => c.type === type);
}

export function isNodeReady(node: V1Node | undefined): boolean {
  return (node?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

export function isReady(pod: V1Pod): boolean {
  return isActive(pod) && condition(pod, 'Ready')?.status === 'True';
}

/** Ready, and for at least `minReadySeconds` at `now`. */
export function isAvailable(pod: V1Pod, minReadySeconds: number, now: number): boolean {
  if (!isReady(pod)) return false;
  if (minReadySeconds <= 0) return true;
  const since = timeOf(condition(pod, 'Ready')?.lastTransitionTime);
  return since !== undefined && since + minReadySeconds * 1000 <= now;
}

/** Milliseconds until `pod` has been Ready for `minReadySeconds` (0 when it has, undefined when it is not Ready). */
export function availableInMs(pod: V1Pod, minReadySeconds: number, now: number): number | undefined {
  if (!isReady(pod)) return undefined;
  const since = timeOf(condition(pod, 'Ready')?.lastTransitionTime) ?? now;
  return Math.max(0, since + minReadySeconds * 1000 - now);
}

export function timeOf(value: Date | string | undefined | null): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The agent container's name: the DaemonSet's `rollplane.io/agent-container` annotation, else its first container. */
export function agentContainerName(ds: V1DaemonSet): string | undefined {
  return ds.metadata?.annotations?.[AGENT_CONTAINER_ANNOTATION] ?? ds.spec?.template?.spec?.containers?.[0]?.name;
}

export function templateImage(ds: V1DaemonSet): string | undefined {
  const name = agentContainerName(ds);
  return ds.spec?.template?.spec?.containers?.find((c) => c.name === name)?.image;
}

export function podImage(pod: V1Pod, container: string | undefined): string | undefined {
  const containers = pod.spec?.containers ?? [];
  return (containers.find((c) => c.name === container) ?? containers[0])?.image;
}

/** Whether the DaemonSet's controller created this pod. */
export function isOwnedBy(pod: V1Pod, ds: V1DaemonSet): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.kind === 'DaemonSet' && r.uid === ds.metadata?.uid);
}

/** When the agent (re)started: the latest container start, else the pod's start. Peer pods must be Ready after it. */
export function agentStartedAt(pod: V1Pod): number | undefined {
  let latest: number | undefined;
  for (const s of pod.status?.containerStatuses ?? []) {
    const t = timeOf(s.state?.running?.startedAt);
    if (t !== undefined) latest = Math.max(latest ?? t, t);
  }
  return latest ?? timeOf(pod.status?.startTime);
}

/** A container that will not start without someone changing the pod (bad image, crash loop), with the reason. */
export function startFailure(pod: V1Pod): string | undefined {
  if (pod.status?.phase === 'Failed') return `pod failed: ${pod.status.reason ?? pod.status.message ?? 'unknown reason'}`;
  for (const s of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const waiting = s.state?.waiting;
    if (waiting && ['ImagePullBackOff', 'ErrImagePull', 'InvalidImageName', 'CrashLoopBackOff', 'CreateContainerConfigError'].includes(waiting.reason ?? '')) {
      return `${waiting.reason}: ${waiting.message ?? `container ${s.name} (${s.image}) does not start`}`;
    }
  }
  return undefined;
}

/**
 * Whether the pod can change anything the gate controller decides on its node: a DaemonSet's pod (an agent, gated or
 * retiring), or a pod with a runtime class (a possible peer pod). Every other pod — most of a cluster's, and every
 * DHCP agent of an agent-pool rollout — is none of the gate's business.
 */
export function mattersToGates(pod: V1Pod): boolean {
  return (
    pod.spec?.runtimeClassName !== undefined ||
    hasGate(pod) ||
    pod.metadata?.labels?.[RETIRING_LABEL] !== undefined ||
    (pod.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.kind === 'DaemonSet')
  );
}

export function hasGate(pod: V1Pod): boolean {
  return (pod.spec?.readinessGates ?? []).some((g) => g.conditionType === PEER_PODS_READY);
}

export function gateSatisfied(pod: V1Pod): boolean {
  return condition(pod, PEER_PODS_READY)?.status === 'True';
}

export interface PeerGate {
  /** Every peer pod on the node is Ready with its Ready transition at or after the agent's start. */
  open: boolean;
  peers: number;
  /** Peer pods Ready since the agent started (i.e. restarted and back). */
  back: number;
  /** Names of the peer pods still waited for. */
  waiting: string[];
}

/**
 * The gate of spec/node-agents.md: the agent's containers are ready and every peer pod on its node (runtime class
 * `runtimeClass`, not being deleted) is Ready with `lastTransitionTime` at or after the agent started. A peer pod
 * that has not been restarted since then keeps the gate closed ("PeerPod <name> has not been restarted").
 */
export function peerGate(agent: V1Pod, podsOnNode: readonly V1Pod[], runtimeClass: string): PeerGate {
  const started = agentStartedAt(agent);
  const peers = podsOnNode.filter((p) => p.spec?.runtimeClassName === runtimeClass && isActive(p));
  const waiting: string[] = [];
  let back = 0;
  for (const peer of peers) {
    const ready = condition(peer, 'Ready');
    const since = timeOf(ready?.lastTransitionTime);
    if (ready?.status === 'True' && started !== undefined && since !== undefined && since >= started) back++;
    else waiting.push(peer.metadata?.name ?? '?');
  }
  const containersReady = condition(agent, 'ContainersReady')?.status === 'True' && started !== undefined;
  return { open: containersReady && waiting.length === 0, peers: peers.length, back, waiting };
}

/** Ready peer pods on a node (for the per-node state shown to users). */
export function readyPeers(podsOnNode: readonly V1Pod[], runtimeClass: string): { peers: number; ready: number } {
  const peers = podsOnNode.filter((p) => p.spec?.runtimeClassName === runtimeClass && isActive(p));
  return { peers: peers.length, ready: peers.filter(isReady).length };
}
