import type { V1DaemonSet, V1Pod } from '@kubernetes/client-node';
import type { NodeAgentCandidates, NodeAgentDriftItem, NodeAgentQueries, NodeAgentSet, NodeAgentState } from '../plan.js';
import { ORIGINAL_STRATEGY_ANNOTATION, PEER_RUNTIME_CLASS_ANNOTATION, ROLLOUT_ANNOTATION } from './names.js';
import type { KubeClients } from '../../../kube/index.js';
import type { EventLog } from '../../../domain/EventLog.js';
import { externalChangeOf } from './externalChange.js';
import { agentRuntimeClass } from './agentEnv.js';
import type { NodeAgentCache } from './NodeAgentCache.js';
import { agentContainerName, isActive, isReady, podImage, readyPeers, templateImage, timeOf } from './podFacts.js';

export interface NodeAgentQueriesDeps {
  cache: NodeAgentCache;
  clients: KubeClients;
  events: Pick<EventLog, 'listBefore'>;
}

/** The node-agent query port, answered from the informer caches. */
export function nodeAgentQueries({ cache, clients, events }: NodeAgentQueriesDeps): NodeAgentQueries {
  /** The node's agent: the DaemonSet's newest active pod, else a retiring one still running there. */
  const agentOn = (ds: V1DaemonSet, node: string): V1Pod | undefined => cache.agentPodsOn(ds, node)[0] ?? cache.retiringOn(ds, node).find(isActive);

  const nodesOf = (ds: V1DaemonSet): string[] => {
    const nodes = new Set<string>();
    for (const pod of cache.agentPods(ds)) if (pod.spec?.nodeName && isActive(pod)) nodes.add(pod.spec.nodeName);
    return [...nodes].sort();
  };

  const toSet = (ds: V1DaemonSet): NodeAgentSet => {
    const desiredImage = templateImage(ds) ?? '';
    const container = agentContainerName(ds);
    const runtimeClass = cache.peerRuntimeClass(ds);
    return {
      namespace: ds.metadata?.namespace ?? '',
      name: ds.metadata?.name ?? '',
      peerRuntimeClass: runtimeClass,
      desiredImage,
      updateStrategy: { ...(ds.spec?.updateStrategy ?? {}) } as Record<string, unknown>,
      drivenBy: ds.metadata?.annotations?.[ROLLOUT_ANNOTATION] ?? null,
      savedUpdateStrategy: parseJsonObject(ds.metadata?.annotations?.[ORIGINAL_STRATEGY_ANNOTATION]),
      nodes: nodesOf(ds).map((node): NodeAgentState => {
        const pod = agentOn(ds, node);
        const image = pod ? (podImage(pod, container) ?? null) : null;
        const peers = readyPeers(cache.podsOn(node), runtimeClass);
        return {
          node,
          podName: pod?.metadata?.name ?? null,
          image,
          ready: [...cache.agentPodsOn(ds, node), ...cache.retiringOn(ds, node)].some(isReady),
          peerPods: peers.peers,
          peerPodsReady: peers.ready,
          upToDate: image === desiredImage,
          retiringPod: cache.retiringOn(ds, node).find(isActive)?.metadata?.name ?? null,
        };
      }),
    };
  };

  return {
    listSets: () => cache.managedSets().map(toSet),
    getSet(namespace, name) {
      const ds = cache.daemonSet(namespace, name);
      return ds ? toSet(ds) : undefined;
    },
    candidates(namespace, name): NodeAgentCandidates | undefined {
      const ds = cache.daemonSet(namespace, name);
      if (!ds) return undefined;
      const container = agentContainerName(ds);
      return {
        set: toSet(ds),
        nodes: nodesOf(ds).map((node) => {
          const pod = agentOn(ds, node);
          return { node, labels: { ...(cache.node(node)?.metadata?.labels ?? {}) }, image: pod ? (podImage(pod, container) ?? null) : null };
        }),
        selectorHasMatchLabels: Object.keys(ds.spec?.selector?.matchLabels ?? {}).length > 0,
        usesHostPorts: (ds.spec?.template?.spec?.containers ?? []).some((c) => (c.ports ?? []).some((p) => p.hostPort !== undefined && p.hostPort !== 0)),
        annotatedPeerRuntimeClass: ds.metadata?.annotations?.[PEER_RUNTIME_CLASS_ANNOTATION] ?? null,
        defaultPeerRuntimeClass: cache.defaultPeerRuntimeClass,
        startupBudgetSeconds: startupBudgetOf(ds, container),
      };
    },
    async agentRuntimeClass(namespace, name) {
      const ds = cache.daemonSet(namespace, name);
      return ds ? agentRuntimeClass(clients, ds) : undefined;
    },
    async driftItems(): Promise<NodeAgentDriftItem[]> {
      const items: NodeAgentDriftItem[] = [];
      for (const ds of cache.managedSets()) {
        const desired = templateImage(ds) ?? null;
        const container = agentContainerName(ds);
        // A template image set outside rollplane (a helm upgrade): agents on it drift from what rollplane rolled out.
        const external = desired ? await externalChangeOf(events, ds, desired) : undefined;
        for (const node of nodesOf(ds)) {
          const pod = agentOn(ds, node);
          const running = pod ? (podImage(pod, container) ?? null) : null;
          if (running === desired) {
            if (external)
              items.push({ kind: 'NODE_AGENT', namespace: '', name: node, desiredVersion: external.rolledOut, runningVersion: running, since: external.since });
            continue;
          }
          const created = timeOf(pod?.metadata?.creationTimestamp);
          items.push({
            kind: 'NODE_AGENT',
            namespace: '',
            name: node,
            desiredVersion: desired,
            runningVersion: running,
            since: created !== undefined ? new Date(created) : null,
          });
        }
      }
      return items;
    },
  };
}

/**
 * The agent container's startupProbe budget: the kubelet restarts it after initialDelaySeconds + periodSeconds ×
 * failureThreshold (Kubernetes' defaults: 0, 10, 3); 0 without a startupProbe.
 */
function startupBudgetOf(ds: V1DaemonSet, container: string | undefined): number {
  const containers = ds.spec?.template?.spec?.containers ?? [];
  const agent = containers.find((c) => c.name === container) ?? containers[0];
  const probe = agent?.startupProbe;
  if (!probe) return 0;
  return (probe.initialDelaySeconds ?? 0) + (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3);
}

function parseJsonObject(text: string | undefined): Record<string, unknown> | null {
  if (!text) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
