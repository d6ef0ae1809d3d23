import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import type { BehaviourContext } from './context.js';
import { isActivePod, isTerminating, keyOf, podAvailability, templateHash } from './kube.js';
import type { RevisionStore } from './RevisionStore.js';
import { countPods, deletePod, minReadySecondsOf, ownerKey, podFromTemplate, writeStatus } from './workload.js';

const REVISION_LABEL = 'controller-revision-hash';

/**
 * StatefulSets as upstream: pods `<name>-0..n-1`; with OrderedReady, ordinal i+1 is created only once 0..i are
 * Running and Ready, and scale-down removes the highest ordinal first, one at a time. RollingUpdate replaces pods
 * from the highest ordinal down to `partition` (ordinals below it keep the current revision), one at a time, waiting
 * for each to be Ready again; OnDelete recreates deleted pods at the update revision and does nothing else.
 * currentRevision moves to updateRevision once every pod runs it and is Ready.
 */
export class StatefulSetController implements Controller {
  readonly name = 'statefulset';

  constructor(
    private readonly ctx: BehaviourContext,
    private readonly revisions: RevisionStore,
  ) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group === 'apps' && plural === 'statefulsets') return event.type === 'DELETED' ? [] : [keyOf(event.object)];
    if (group === '' && plural === 'pods') {
      const key = ownerKey(event, 'StatefulSet');
      return key ? [key] : [];
    }
    return [];
  }

  initialKeys(): string[] {
    return [...this.ctx.index.all('statefulsets')].map(keyOf);
  }

  reconcile(key: string): number | undefined {
    const sts = this.ctx.index.get('statefulsets', key);
    if (!sts || isTerminating(sts)) return undefined;
    const name = sts.metadata.name;
    const updateRevision = this.revisions.ensure(sts, templateHash(sts.spec?.template), {});
    const currentRevision: string = sts.status?.currentRevision ?? updateRevision;
    const replicas = Number(sts.spec?.replicas ?? 1);
    const ordered = (sts.spec?.podManagementPolicy ?? 'OrderedReady') === 'OrderedReady';
    const strategy = sts.spec?.updateStrategy?.type ?? 'RollingUpdate';
    const partition = strategy === 'RollingUpdate' ? Number(sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) : 0;
    const minReady = minReadySecondsOf(sts);
    const now = this.ctx.scheduler.now();
    const healthy = (pod: KubeObject) => isActivePod(pod) && pod.status?.phase === 'Running' && podAvailability(pod, minReady, now).available;

    const byOrdinal = new Map<number, KubeObject>();
    for (const pod of this.ctx.index.ownedBy(sts.metadata.uid, 'pods')) {
      const ordinal = ordinalOf(name, pod.metadata.name);
      if (ordinal !== undefined) byOrdinal.set(ordinal, pod);
    }

    const step = (): void => {
      // Create missing pods (in order, each waiting for its predecessors under OrderedReady).
      for (let i = 0; i < replicas; i++) {
        const pod = byOrdinal.get(i);
        if (!pod) {
          // Below the partition a recreated pod keeps the current revision; everything else gets the update revision.
          const revision = strategy === 'RollingUpdate' && i < partition ? currentRevision : updateRevision;
          this.createPod(sts, i, revision);
          if (ordered) return;
          continue;
        }
        if (ordered && !healthy(pod)) return;
      }
      // Scale down from the highest ordinal.
      const condemned = [...byOrdinal.keys()].filter((i) => i >= replicas).sort((a, b) => b - a);
      for (const i of condemned) {
        const pod = byOrdinal.get(i)!;
        if (isTerminating(pod)) {
          if (ordered) return;
          continue;
        }
        deletePod(this.ctx, pod);
        if (ordered) return;
      }
      if (strategy !== 'RollingUpdate') return;
      // Roll from the highest ordinal down to the partition, one pod at a time.
      for (let i = replicas - 1; i >= partition; i--) {
        const pod = byOrdinal.get(i);
        if (!pod) return;
        if (pod.metadata.labels?.[REVISION_LABEL] !== updateRevision && !isTerminating(pod)) {
          deletePod(this.ctx, pod);
          return;
        }
        if (!healthy(pod)) return;
      }
    };
    step();
    return this.updateStatus(sts, currentRevision, updateRevision, replicas);
  }

  private createPod(sts: KubeObject, ordinal: number, revision: string): void {
    const template = this.revisions.template(sts.metadata.namespace, revision) ?? sts.spec?.template;
    const podName = `${sts.metadata.name}-${ordinal}`;
    const pod = podFromTemplate(sts, template, podName, {
      [REVISION_LABEL]: revision,
      'statefulset.kubernetes.io/pod-name': podName,
      'apps.kubernetes.io/pod-index': String(ordinal),
    });
    pod.spec = { ...pod.spec, hostname: podName };
    if (sts.spec?.serviceName) pod.spec.subdomain = sts.spec.serviceName;
    try {
      this.ctx.store.create(this.ctx.types.pods, pod);
    } catch (error) {
      // The previous pod of this ordinal is still being removed: its DELETED event brings us back.
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }

  private updateStatus(sts: KubeObject, currentRevision: string, updateRevision: string, replicas: number): number | undefined {
    const current = this.ctx.index.get('statefulsets', keyOf(sts));
    if (!current) return undefined;
    const pods = this.ctx.index.ownedBy(current.metadata.uid, 'pods');
    const counts = countPods(pods, minReadySecondsOf(current), this.ctx.scheduler.now());
    const active = pods.filter(isActivePod);
    const updated = active.filter((p) => p.metadata.labels?.[REVISION_LABEL] === updateRevision).length;
    const complete = updated === replicas && counts.ready === replicas && counts.replicas === replicas;
    const revision = complete ? updateRevision : currentRevision;
    const status: Record<string, unknown> = {
      observedGeneration: current.metadata.generation ?? 1,
      replicas: counts.replicas,
      readyReplicas: counts.ready,
      availableReplicas: counts.available,
      currentReplicas: active.filter((p) => p.metadata.labels?.[REVISION_LABEL] === revision).length,
      updatedReplicas: updated,
      currentRevision: revision,
      updateRevision,
      collisionCount: 0,
    };
    writeStatus(this.ctx, this.ctx.types.statefulsets, current, status);
    return counts.recheckInMs;
  }
}

function ordinalOf(setName: string, podName: string): number | undefined {
  if (!podName.startsWith(`${setName}-`)) return undefined;
  const suffix = podName.slice(setName.length + 1);
  return /^\d+$/.test(suffix) ? Number(suffix) : undefined;
}
