import type { V1DaemonSet, V1Node, V1Pod } from '@kubernetes/client-node';
import type { Informer } from '../../../controller/Informer.js';
import type { ClusterInformers } from '../../../controllers/informers.js';
import { GATE_RUNTIME_CLASS_ANNOTATION, NODE_AGENT_LABEL, PEER_RUNTIME_CLASS_ANNOTATION, RETIRING_LABEL } from './names.js';
import { isActive, isOwnedBy } from './podFacts.js';

const BY_NODE = 'node';
const BY_OWNER = 'owner';

export interface NodeAgentCacheDeps {
  informers: ClusterInformers;
  /** DaemonSets managed although not labelled (`namespace/name`). */
  configured: ReadonlySet<string>;
  defaultPeerRuntimeClass: string;
}

/**
 * The informer caches node-agent rollouts read: DaemonSets, pods (indexed by node and by controller uid) and nodes.
 * Every read the driver's `observe` and the queries make comes from here.
 */
export class NodeAgentCache {
  readonly daemonSets: Informer<V1DaemonSet>;
  readonly pods: Informer<V1Pod>;
  readonly nodes: Informer<V1Node>;

  /** DaemonSets managed although not labelled (`namespace/name`). */
  private readonly configured: ReadonlySet<string>;
  readonly defaultPeerRuntimeClass: string;

  constructor(deps: NodeAgentCacheDeps) {
    this.configured = deps.configured;
    this.defaultPeerRuntimeClass = deps.defaultPeerRuntimeClass;
    this.daemonSets = deps.informers.daemonSets();
    this.pods = deps.informers.pods({
      [BY_NODE]: (pod) => (pod.spec?.nodeName ? [pod.spec.nodeName] : []),
      [BY_OWNER]: (pod) => (pod.metadata?.ownerReferences ?? []).filter((r) => r.controller === true && r.kind === 'DaemonSet').map((r) => r.uid),
    });
    this.nodes = deps.informers.nodes();
  }

  daemonSet(namespace: string, name: string): V1DaemonSet | undefined {
    return this.daemonSets.get(namespace, name);
  }

  isManaged(ds: V1DaemonSet): boolean {
    return ds.metadata?.labels?.[NODE_AGENT_LABEL] === 'true' || this.configured.has(`${ds.metadata?.namespace}/${ds.metadata?.name}`);
  }

  /** Managed sets ordered by namespace and name. */
  managedSets(): V1DaemonSet[] {
    return (
      this.daemonSets
        .list()
        .filter((ds) => this.isManaged(ds))
        .map((ds) => ({ ds, key: `${ds.metadata?.namespace}/${ds.metadata?.name}` }))
        // Code-unit order, the same the cursors compare with.
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map(({ ds }) => ds)
    );
  }

  /** Pods the DaemonSet's controller created (any state). */
  agentPods(ds: V1DaemonSet): V1Pod[] {
    return this.pods.byIndex(BY_OWNER, ds.metadata?.uid ?? '').filter((p) => isOwnedBy(p, ds));
  }

  /** The DaemonSet's pods on `node` that are not being deleted, newest first. */
  agentPodsOn(ds: V1DaemonSet, node: string): V1Pod[] {
    return this.podsOn(node)
      .filter((p) => isOwnedBy(p, ds) && isActive(p))
      .sort((a, b) => creation(b) - creation(a));
  }

  /** Old agents handed over in SURGE mode that still run on `node`. */
  retiringOn(ds: V1DaemonSet, node: string): V1Pod[] {
    return this.podsOn(node).filter((p) => p.metadata?.namespace === ds.metadata?.namespace && p.metadata?.labels?.[RETIRING_LABEL] === ds.metadata?.name);
  }

  podsOn(node: string): V1Pod[] {
    return this.pods.byIndex(BY_NODE, node);
  }

  node(name: string): V1Node | undefined {
    return this.nodes.get(undefined, name);
  }

  /** The class the gate waits on: the running rollout's, else the DaemonSet's annotation, else the default. */
  peerRuntimeClass(ds: V1DaemonSet): string {
    const a = ds.metadata?.annotations ?? {};
    return a[GATE_RUNTIME_CLASS_ANNOTATION] ?? a[PEER_RUNTIME_CLASS_ANNOTATION] ?? this.defaultPeerRuntimeClass;
  }
}

function creation(pod: V1Pod): number {
  const t = pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}
