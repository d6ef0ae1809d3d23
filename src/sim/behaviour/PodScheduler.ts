import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import type { BehaviourContext } from './context.js';
import { conditionOf, isTerminating, keyOf } from './kube.js';
import { isNodeSchedulable, podFitsNode, toleratesNode } from './nodeMatch.js';
import { withCondition } from './podStatus.js';

/**
 * A trivial scheduler: binds an unscheduled pod, after podScheduleMs, to the least-loaded Ready node that satisfies
 * its nodeSelector and required node affinity and whose taints it tolerates; reports PodScheduled=False/Unschedulable when none does and tries
 * again when nodes change.
 */
export class PodScheduler implements Controller {
  readonly name = 'scheduler';
  readonly delayMs = 0;
  private readonly firstSeen = new Map<string, number>();

  constructor(private readonly ctx: BehaviourContext) {}

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group !== '') return [];
    if (plural === 'pods') {
      if (event.type === 'DELETED') {
        this.firstSeen.delete(event.object.metadata.uid ?? '');
        return [];
      }
      return event.object.spec?.nodeName ? [] : [keyOf(event.object)];
    }
    if (plural === 'nodes') return this.ctx.index.unscheduled();
    return [];
  }

  initialKeys(): string[] {
    return this.ctx.index.unscheduled();
  }

  reconcile(key: string): number | undefined {
    const pod = this.ctx.index.get('pods', key);
    if (!pod || pod.spec?.nodeName || isTerminating(pod)) return undefined;
    const now = this.ctx.scheduler.now();
    const uid = pod.metadata.uid ?? '';
    const seen = this.firstSeen.get(uid) ?? now;
    this.firstSeen.set(uid, seen);
    const wait = seen + this.ctx.delays.podScheduleMs - now;
    if (wait > 0) return wait;

    const node = this.pickNode(pod);
    if (!node) {
      if (conditionOf(pod, 'PodScheduled')?.reason !== 'Unschedulable') {
        const total = [...this.ctx.index.all('nodes')].length;
        const conditions = withCondition(
          pod.status?.conditions,
          'PodScheduled',
          'False',
          now,
          'Unschedulable',
          `0/${total} nodes are available: ${total} node(s) didn't match Pod's node affinity/selector, had untolerated taints or were not ready.`,
        );
        this.ctx.store.update(
          this.ctx.types.pods,
          { ...pod, metadata: { ...pod.metadata }, status: { phase: 'Pending', ...pod.status, conditions } },
          'status',
          { handOver: true },
        );
      }
      return undefined;
    }
    this.firstSeen.delete(uid);
    // pods/binding, as the real scheduler binds: pod spec updates may not set the node.
    // A fresh object, metadata and spec over the stored pod's unchanged parts: handed over, not copied again.
    this.ctx.store.update(this.ctx.types.pods, { ...pod, metadata: { ...pod.metadata }, spec: { ...pod.spec, nodeName: node.metadata.name } }, 'binding', {
      handOver: true,
    });
    return undefined;
  }

  private pickNode(pod: KubeObject): KubeObject | undefined {
    let best: KubeObject | undefined;
    let bestLoad = Infinity;
    for (const node of this.ctx.index.all('nodes')) {
      if (!isNodeSchedulable(node) || !podFitsNode(pod.spec, node) || !toleratesNode(pod.spec, node)) continue;
      const load = this.ctx.index.podCountOn(node.metadata.name);
      if (load < bestLoad) {
        best = node;
        bestLoad = load;
      }
    }
    return best;
  }
}
