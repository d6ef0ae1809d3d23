import type { V1DaemonSet } from '@kubernetes/client-node';
import type { Reconciler, Request, Result } from '../../../controller/Controller.js';
import type { KubeClients } from '../../../kube/index.js';
import type { TargetRef } from '../../../controllers/TargetNotifier.js';
import type { NodeAgentMetrics } from './metrics.js';
import type { NodeAgentCache } from './NodeAgentCache.js';
import { RETIRING_LABEL } from './names.js';
import { gateSatisfied, hasGate, isActive, isReady, peerGate } from './podFacts.js';
import { deletePod, openGate } from './writes.js';

export interface NodeAgentReconcilerDeps {
  clients: KubeClients;
  cache: NodeAgentCache;
  metrics: NodeAgentMetrics;
  /** Tells the engine a node's target changed (TargetNotifier). */
  notify(ref: TargetRef): void;
}

/**
 * One node (the request's name). Level-based, so a restarted rollplane picks up where it was:
 * - an agent pod carrying the `rollplane.io/peer-pods-ready` gate gets the condition once the gate is open (agent
 *   containers ready, every peer pod on the node Ready again since the agent started); once set it stays set;
 * - a retiring (SURGE hand-over) agent is deleted once its DaemonSet has a Ready agent on the node.
 * Runs for every gated pod, not only during rollouts: a gate left in a template is always satisfied.
 */
export class NodeAgentReconciler implements Reconciler {
  /**
   * Pod uids whose gate this process opened: the cache may not show the condition yet when the node is reconciled
   * again, and a second identical status write is only waste. Bounded; forgetting one costs one repeated write.
   */
  private readonly opened = new Set<string>();

  constructor(private readonly deps: NodeAgentReconcilerDeps) {}

  async reconcile(request: Request): Promise<Result | void> {
    const node = request.name;
    const { cache } = this.deps;
    const podsOnNode = cache.podsOn(node);
    for (const pod of podsOnNode) {
      if (!isActive(pod) || !hasGate(pod) || gateSatisfied(pod) || this.opened.has(pod.metadata?.uid ?? '')) continue;
      const ds = ownerSet(cache, pod.metadata?.namespace ?? '', pod.metadata?.ownerReferences ?? []);
      const runtimeClass = ds ? cache.peerRuntimeClass(ds) : cache.defaultPeerRuntimeClass;
      const gate = peerGate(pod, podsOnNode, runtimeClass);
      if (!gate.open) continue;
      await openGate(this.deps.clients, pod, `${gate.back} peer pod(s) of runtime class ${runtimeClass} Ready since the agent started`);
      if (this.opened.size >= 10_000) this.opened.clear();
      this.opened.add(pod.metadata?.uid ?? '');
      this.deps.metrics.gateOpened(ds ? `${ds.metadata?.namespace}/${ds.metadata?.name}` : '');
    }
    for (const pod of podsOnNode) {
      const setName = pod.metadata?.labels?.[RETIRING_LABEL];
      if (!setName || pod.metadata?.deletionTimestamp) continue;
      const ds = cache.daemonSet(pod.metadata?.namespace ?? '', setName);
      // Without its DaemonSet nothing replaces it: keep it (it is the node's agent).
      if (!ds) continue;
      if (cache.agentPodsOn(ds, node).some((p) => isReady(p) && (!hasGate(p) || gateSatisfied(p)))) await deletePod(this.deps.clients, pod);
    }
    this.deps.notify({ name: node });
  }
}

function ownerSet(cache: NodeAgentCache, namespace: string, refs: readonly { kind: string; name: string; controller?: boolean }[]): V1DaemonSet | undefined {
  const ref = refs.find((r) => r.controller === true && r.kind === 'DaemonSet');
  return ref ? cache.daemonSet(namespace, ref.name) : undefined;
}
