import type { V1DaemonSet, V1Pod } from '@kubernetes/client-node';
import type { Controller } from '../../../controller/Controller.js';
import { feed } from '../../../controller/sources.js';
import { DEFAULT_PEER_RUNTIME_CLASS, type NodeAgentQueries } from '../plan.js';
import type { RolloutDriver } from '../../../domain/ports.js';
import type { ControllerHost } from '../../../controllers/host.js';
import { kindHost } from '../../../controllers/kindHost.js';
import type { TargetRef } from '../../../controllers/TargetNotifier.js';
import { ExternalChangeRecorder, externalSignature } from './ExternalChangeRecorder.js';
import { NodeAgentReconciler } from './NodeAgentReconciler.js';
import { mattersToGates } from './podFacts.js';
import { nodeAgentMetrics } from './metrics.js';
import { NodeAgentCache } from './NodeAgentCache.js';
import { NodeAgentDriver, type Replacement } from './NodeAgentDriver.js';
import { nodeAgentQueries } from './queries.js';
import { NODE_AGENT_DEFAULTS } from '../settings.js';

export { NodeAgentCache } from './NodeAgentCache.js';
export { NodeAgentDriver } from './NodeAgentDriver.js';
export * from './names.js';

export interface NodeAgentOptions {
  /** DaemonSets managed without the `rollplane.io/node-agent: "true"` label (`namespace/name`). */
  daemonSets?: readonly string[];
  /** Peer runtime class when neither the rollout nor the DaemonSet names one. Default kata-remote. */
  peerRuntimeClass?: string;
  /** Gate controller workers (one node per worker). Default 4. */
  workers?: number;
  now?: () => number;
}

export interface NodeAgentRuntime {
  driver: RolloutDriver;
  queries: NodeAgentQueries;
  controller: Controller;
  cache: NodeAgentCache;
}

/**
 * Node-agent rollouts on the host: informers (DaemonSets, pods, nodes), the gate controller (one key per node) and the
 * driver the engine calls. See docs/adr/0006-node-agent-gate.md.
 */
export function setupNodeAgents(controllerHost: ControllerHost, options: NodeAgentOptions = {}): NodeAgentRuntime {
  const host = kindHost(controllerHost, 'NODE_AGENT');
  const cache = new NodeAgentCache({
    informers: host.informers,
    configured: new Set(options.daemonSets ?? []),
    defaultPeerRuntimeClass: options.peerRuntimeClass ?? DEFAULT_PEER_RUNTIME_CLASS,
  });
  const metrics = nodeAgentMetrics(host.registry);
  // Each node's reconcile and observation tells the engine at once (a node is one target; nothing to coalesce).
  const notifier = host.notifier();
  const notify = (ref: TargetRef) => notifier.notify(ref);
  const driver = new NodeAgentDriver({
    clients: host.clients,
    cache,
    replacements: host.history.once<Replacement>(),
    metrics,
    notify,
    logger: host.logger.child({ controller: 'nodeagent' }),
    ...(options.now ? { now: options.now } : {}),
  });
  const controller = host.controller({
    name: 'nodeagent-gate',
    reconciler: new NodeAgentReconciler({ clients: host.clients, cache, metrics, notify }),
    workers: options.workers ?? NODE_AGENT_DEFAULTS.workers,
  });
  // Pods that can move a gate: their node. DaemonSets: every node they run on (a template or strategy change may open or
  // close gates).
  feed<V1Pod>(cache.pods, controller, { map: (pod) => (pod.spec?.nodeName && mattersToGates(pod) ? [{ name: pod.spec.nodeName }] : []) });
  feed<V1DaemonSet>(cache.daemonSets, controller, {
    map: (ds) => [...new Set(cache.agentPods(ds).map((p) => p.spec?.nodeName ?? ''))].filter(Boolean).map((name) => ({ name })),
    predicates: [{ update: (o, n) => o.metadata?.generation !== n.metadata?.generation }],
  });
  // Changes made outside rollplane (a helm upgrade of the chart) and the agents they replace are history too.
  const external = host.controller({
    name: 'nodeagent-external-changes',
    reconciler: new ExternalChangeRecorder({ cache, events: host.history, logger: host.logger.child({ controller: 'nodeagent' }) }),
    workers: 1,
  });
  feed<V1DaemonSet>(cache.daemonSets, external, { predicates: [{ update: (o, n) => externalSignature(o) !== externalSignature(n) }] });
  feed<V1Pod>(cache.pods, external, {
    map: (pod) =>
      (pod.metadata?.ownerReferences ?? [])
        .filter((r) => r.controller === true && r.kind === 'DaemonSet')
        .map((r) => ({ namespace: pod.metadata?.namespace ?? '', name: r.name })),
  });
  return { driver, queries: nodeAgentQueries({ cache, clients: host.clients, events: host.events }), controller, cache };
}
