import type { KubeObject } from '../types.js';
import type { BehaviourContext } from './context.js';
import { isoTime } from './kube.js';
import { withCondition } from './podStatus.js';

/** Node crash and recovery: what a kubelet that stops (or resumes) posting its status looks like from the API. */
export interface NodeControl {
  /**
   * Ready=Unknown ("Kubelet stopped posting node status") and the unreachable taints: its pods turn NotReady, its
   * deletions hang.
   */
  crash(name: string): KubeObject;
  /** Ready=True again: the node's pods become Ready after podReadyMs and pending deletions complete. */
  recover(name: string): KubeObject;
}

const UNREACHABLE = 'node.kubernetes.io/unreachable';

export class NodeLifecycle implements NodeControl {
  constructor(private readonly ctx: BehaviourContext) {}

  crash(name: string): KubeObject {
    const node = this.setReady(name, 'Unknown', 'NodeStatusUnknown', 'Kubelet stopped posting node status.');
    return this.setTaints(node, true);
  }

  recover(name: string): KubeObject {
    const node = this.setReady(name, 'True', 'KubeletReady', 'kubelet is posting ready status');
    return this.setTaints(node, false);
  }

  /** The node lifecycle controller's `unreachable` taints (NoSchedule, NoExecute) while the node is down. */
  private setTaints(node: KubeObject, unreachable: boolean): KubeObject {
    const taints: { key: string; effect: string; timeAdded?: string }[] = node.spec?.taints ?? [];
    const others = taints.filter((t) => t.key !== UNREACHABLE);
    const next = unreachable
      ? [
          ...others,
          ...['NoSchedule', 'NoExecute'].map(
            (effect) =>
              taints.find((t) => t.key === UNREACHABLE && t.effect === effect) ?? { key: UNREACHABLE, effect, timeAdded: isoTime(this.ctx.scheduler.now()) },
          ),
        ]
      : others;
    if (next.length === taints.length && next.every((t, i) => t === taints[i])) return node;
    const spec = { ...node.spec };
    if (next.length > 0) spec.taints = next;
    else delete spec.taints;
    return this.ctx.store.update(this.ctx.types.nodes, { ...node, spec });
  }

  private setReady(name: string, status: 'True' | 'Unknown', reason: string, message: string): KubeObject {
    const node = this.ctx.store.get(this.ctx.types.nodes, undefined, name);
    if (!node) {
      // Let the store produce its own NotFound error shape.
      return this.ctx.store.update(this.ctx.types.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name } }, 'status');
    }
    const now = this.ctx.scheduler.now();
    const conditions = withCondition(node.status?.conditions, 'Ready', status, now, reason, message).map((c) =>
      c.type === 'Ready' ? { ...c, lastHeartbeatTime: isoTime(now), lastProbeTime: undefined } : c,
    );
    return this.ctx.store.update(this.ctx.types.nodes, { ...node, status: { ...node.status, conditions } }, 'status');
  }
}
