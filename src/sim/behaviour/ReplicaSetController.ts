import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import type { BehaviourContext } from './context.js';
import { isActivePod, isTerminating, keyOf } from './kube.js';
import { countPods, createGeneratedPod, deletePod, deletionRank, minReadySecondsOf, ownerKey, writeStatus } from './workload.js';

/** Keeps `spec.replicas` active pods per ReplicaSet; terminating pods do not count (as upstream). */
export class ReplicaSetController implements Controller {
  readonly name = 'replicaset';

  constructor(private readonly ctx: BehaviourContext) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group === 'apps' && plural === 'replicasets') return event.type === 'DELETED' ? [] : [keyOf(event.object)];
    if (group === '' && plural === 'pods') {
      const key = ownerKey(event, 'ReplicaSet');
      return key ? [key] : [];
    }
    return [];
  }

  initialKeys(): string[] {
    return [...this.ctx.index.all('replicasets')].map(keyOf);
  }

  reconcile(key: string): number | undefined {
    const rs = this.ctx.index.get('replicasets', key);
    if (!rs || isTerminating(rs)) return undefined;
    const want = Number(rs.spec?.replicas ?? 1);
    const pods = this.ctx.index.ownedBy(rs.metadata.uid, 'pods');
    const active = pods.filter(isActivePod);
    if (active.length < want) {
      for (let i = active.length; i < want; i++) createGeneratedPod(this.ctx, rs, rs.spec?.template, rs.metadata.name, {});
    } else if (active.length > want) {
      const victims = [...active].sort((a, b) => deletionRank(a) - deletionRank(b) || newerFirst(a, b)).slice(0, active.length - want);
      for (const pod of victims) deletePod(this.ctx, pod);
    }
    return this.updateStatus(rs);
  }

  private updateStatus(rs: KubeObject): number | undefined {
    const pods = this.ctx.index.ownedBy(rs.metadata.uid, 'pods');
    const counts = countPods(pods, minReadySecondsOf(rs), this.ctx.scheduler.now());
    const status: Record<string, unknown> = {
      replicas: counts.replicas,
      fullyLabeledReplicas: counts.replicas,
      readyReplicas: counts.ready,
      availableReplicas: counts.available,
      observedGeneration: rs.metadata.generation ?? 1,
    };
    const current = this.ctx.index.get('replicasets', keyOf(rs)) ?? rs;
    writeStatus(this.ctx, this.ctx.types.replicasets, current, status);
    return counts.recheckInMs;
  }
}

function newerFirst(a: KubeObject, b: KubeObject): number {
  return (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '');
}
