import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import type { BehaviourContext } from './context.js';
import { type Condition, isoTime, isTerminating, keyOf, ownerRefTo, scaledValue, splitKey, templateHash } from './kube.js';
import { countPods, minReadySecondsOf, ownerKey, writeStatus } from './workload.js';

const HASH_LABEL = 'pod-template-hash';
const REVISION = 'deployment.kubernetes.io/revision';

interface RsView {
  rs: KubeObject;
  spec: number;
  /** Active pods (not terminating). */
  live: number;
  ready: number;
  available: number;
  recheckInMs: number | undefined;
}

/**
 * Deployments as upstream runs them: one ReplicaSet per pod-template hash; RollingUpdate scales the new ReplicaSet up
 * within maxSurge and old ones down within maxUnavailable; Recreate removes every old pod before creating new ones.
 * Two deliberate tightenings over upstream, which reads possibly stale ReplicaSet statuses: availability comes from
 * the live pods, capped at each ReplicaSet's spec.replicas (pods about to be deleted do not count), and the surge
 * budget counts pods a ReplicaSet has not deleted yet. So the bounds hold at every instant, not only eventually.
 */
export class DeploymentController implements Controller {
  readonly name = 'deployment';
  private cached: { uid: string; views: RsView[] } | undefined;

  constructor(private readonly ctx: BehaviourContext) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group === 'apps' && plural === 'deployments') return event.type === 'DELETED' ? [] : [keyOf(event.object)];
    if (group === 'apps' && plural === 'replicasets') {
      const key = ownerKey(event, 'Deployment');
      return key ? [key] : [];
    }
    if (group === '' && plural === 'pods') {
      const rsKey = ownerKey(event, 'ReplicaSet');
      const rs = rsKey ? this.ctx.index.get('replicasets', rsKey) : undefined;
      if (!rs) return [];
      const key = ownerKey({ type: 'MODIFIED', resource: event.resource, object: rs }, 'Deployment');
      return key ? [key] : [];
    }
    return [];
  }

  initialKeys(): string[] {
    return [...this.ctx.index.all('deployments')].map(keyOf);
  }

  reconcile(key: string): number | undefined {
    this.cached = undefined;
    const deployment = this.ctx.index.get('deployments', key);
    if (!deployment || isTerminating(deployment)) return undefined;
    const hash = templateHash(deployment.spec?.template);
    if (!deployment.spec?.paused) {
      const newRs = this.ensureNewReplicaSet(deployment, hash);
      if (deployment.spec?.strategy?.type === 'Recreate') this.recreate(deployment, newRs);
      else this.rollingUpdate(deployment, newRs);
      this.cleanupHistory(deployment, hash);
    }
    return this.updateStatus(deployment, hash);
  }

  /**
   * The deployment's ReplicaSets with their pod counts, computed once per reconcile and again only after this
   * controller wrote a ReplicaSet (pods change only through other controllers, later).
   */
  private views(deployment: KubeObject): RsView[] {
    const cached = this.cached;
    if (cached && cached.uid === deployment.metadata.uid) return cached.views;
    const views = this.computeViews(deployment);
    this.cached = { uid: deployment.metadata.uid ?? '', views };
    return views;
  }

  private computeViews(deployment: KubeObject): RsView[] {
    const now = this.ctx.scheduler.now();
    const minReady = minReadySecondsOf(deployment);
    return this.ctx.index
      .ownedBy(deployment.metadata.uid, 'replicasets')
      .filter((rs) => !isTerminating(rs))
      .map((rs) => {
        const counts = countPods(this.ctx.index.ownedBy(rs.metadata.uid, 'pods'), minReady, now);
        return {
          rs,
          spec: Number(rs.spec?.replicas ?? 0),
          live: counts.replicas,
          ready: counts.ready,
          available: counts.available,
          recheckInMs: counts.recheckInMs,
        };
      })
      .sort((a, b) => (a.rs.metadata.creationTimestamp ?? '').localeCompare(b.rs.metadata.creationTimestamp ?? '') || revisionOf(a.rs) - revisionOf(b.rs));
  }

  private ensureNewReplicaSet(deployment: KubeObject, hash: string): KubeObject {
    this.cached = undefined;
    const owned = this.ctx.index.ownedBy(deployment.metadata.uid, 'replicasets').filter((rs) => !isTerminating(rs));
    const maxRevision = owned.reduce((max, rs) => Math.max(max, revisionOf(rs)), 0);
    const existing = owned.find((rs) => rs.metadata.labels?.[HASH_LABEL] === hash);
    let newRs: KubeObject;
    if (existing) {
      newRs = existing;
      // Rolling back to an older template reuses its ReplicaSet, which becomes the newest revision again.
      if (revisionOf(existing) < maxRevision || !existing.metadata.annotations?.[REVISION]) {
        newRs = this.ctx.store.update(this.ctx.types.replicasets, {
          ...existing,
          metadata: { ...existing.metadata, annotations: { ...existing.metadata.annotations, [REVISION]: String(maxRevision + 1) } },
        });
      }
    } else {
      newRs = this.createReplicaSet(deployment, hash, maxRevision + 1);
    }
    const revision = newRs.metadata.annotations?.[REVISION];
    if (revision && deployment.metadata.annotations?.[REVISION] !== revision) {
      const current = this.ctx.index.get('deployments', keyOf(deployment)) ?? deployment;
      this.ctx.store.update(this.ctx.types.deployments, {
        ...current,
        metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [REVISION]: revision } },
      });
    }
    return newRs;
  }

  private createReplicaSet(deployment: KubeObject, hash: string, revision: number): KubeObject {
    const template = deployment.spec?.template ?? {};
    const labels = { ...template.metadata?.labels, [HASH_LABEL]: hash };
    const selector = deployment.spec?.selector ?? {};
    const rs: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${deployment.metadata.name}-${hash}`,
        namespace: deployment.metadata.namespace,
        labels,
        annotations: { [REVISION]: String(revision) },
        ownerReferences: [ownerRefTo(deployment)],
      },
      spec: {
        replicas: 0,
        minReadySeconds: minReadySecondsOf(deployment),
        selector: { ...selector, matchLabels: { ...selector.matchLabels, [HASH_LABEL]: hash } },
        template: { ...template, metadata: { ...template.metadata, labels } },
      },
    };
    try {
      return this.ctx.store.create(this.ctx.types.replicasets, rs);
    } catch (error) {
      const found = this.ctx.index.get('replicasets', keyOf(rs));
      if ((error as { code?: number }).code === 409 && found) return found;
      throw error;
    }
  }

  private rollingUpdate(deployment: KubeObject, newRs: KubeObject): void {
    const desired = Number(deployment.spec?.replicas ?? 1);
    const { maxSurge, maxUnavailable } = rollingBounds(deployment, desired);
    const newUid = newRs.metadata.uid;

    // Scale the new ReplicaSet up within the surge budget (counting pods old ReplicaSets have yet to delete).
    let views = this.views(deployment);
    let fresh = views.find((v) => v.rs.metadata.uid === newUid);
    if (!fresh) return;
    if (fresh.spec > desired) this.scale(fresh.rs, desired);
    else if (fresh.spec < desired) {
      const current = views.reduce((sum, v) => sum + Math.max(v.spec, v.live), 0);
      const up = Math.min(desired + maxSurge - current, desired - fresh.spec);
      if (up > 0) this.scale(fresh.rs, fresh.spec + up);
    }

    // Scale old ReplicaSets down without dropping below desired - maxUnavailable available pods.
    views = this.views(deployment);
    fresh = views.find((v) => v.rs.metadata.uid === newUid)!;
    const old = views.filter((v) => v !== fresh && v.spec > 0);
    if (old.length === 0) return;
    const minAvailable = desired - maxUnavailable;
    const allPods = views.reduce((sum, v) => sum + v.spec, 0);
    const newUnavailable = fresh.spec - Math.min(fresh.spec, fresh.available);
    const maxScaledDown = allPods - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return;
    let cleaned = 0;
    for (const v of old) {
      if (cleaned >= maxScaledDown) break;
      const unhealthy = v.spec - Math.min(v.spec, v.available);
      if (unhealthy <= 0) continue;
      const n = Math.min(maxScaledDown - cleaned, unhealthy);
      this.scale(v.rs, v.spec - n);
      cleaned += n;
    }
    views = this.views(deployment);
    const available = views.reduce((sum, v) => sum + Math.min(v.spec, v.available), 0);
    if (available <= minAvailable) return;
    let remaining = available - minAvailable;
    for (const v of views) {
      if (remaining <= 0) break;
      if (v.rs.metadata.uid === newUid || v.spec === 0) continue;
      const n = Math.min(v.spec, remaining);
      this.scale(v.rs, v.spec - n);
      remaining -= n;
    }
  }

  private recreate(deployment: KubeObject, newRs: KubeObject): void {
    const desired = Number(deployment.spec?.replicas ?? 1);
    const old = this.views(deployment).filter((v) => v.rs.metadata.uid !== newRs.metadata.uid);
    for (const v of old) if (v.spec > 0) this.scale(v.rs, 0);
    // Every old pod, terminating ones included, must be gone before a new one starts.
    if (old.some((v) => this.ctx.index.ownedBy(v.rs.metadata.uid, 'pods').length > 0)) return;
    const current = this.ctx.index.get('replicasets', keyOf(newRs)) ?? newRs;
    if (Number(current.spec?.replicas ?? 0) !== desired) this.scale(current, desired);
  }

  private scale(rs: KubeObject, replicas: number): void {
    const current = this.ctx.index.get('replicasets', keyOf(rs)) ?? rs;
    if (Number(current.spec?.replicas ?? 0) === replicas) return;
    this.cached = undefined;
    this.ctx.store.update(this.ctx.types.replicasets, { ...current, spec: { ...current.spec, replicas } });
  }

  private cleanupHistory(deployment: KubeObject, hash: string): void {
    const limit = Number(deployment.spec?.revisionHistoryLimit ?? 10);
    const idle = this.views(deployment)
      .filter((v) => v.rs.metadata.labels?.[HASH_LABEL] !== hash && v.spec === 0 && this.ctx.index.ownedBy(v.rs.metadata.uid, 'pods').length === 0)
      .sort((a, b) => revisionOf(a.rs) - revisionOf(b.rs));
    for (const v of idle.slice(0, Math.max(0, idle.length - limit))) {
      const { namespace, name } = splitKey(keyOf(v.rs));
      this.cached = undefined;
      try {
        this.ctx.store.delete(this.ctx.types.replicasets, namespace, name);
      } catch (error) {
        if ((error as { code?: number }).code !== 404) throw error;
      }
    }
  }

  private updateStatus(deployment: KubeObject, hash: string): number | undefined {
    const current = this.ctx.index.get('deployments', keyOf(deployment));
    if (!current) return undefined;
    const desired = Number(current.spec?.replicas ?? 1);
    const views = this.views(current);
    const fresh = views.find((v) => v.rs.metadata.labels?.[HASH_LABEL] === hash);
    const sum = (f: (v: RsView) => number) => views.reduce((total, v) => total + f(v), 0);
    const replicas = sum((v) => v.live);
    const updated = fresh?.live ?? 0;
    const available = sum((v) => v.available);
    const { maxUnavailable } = rollingBounds(current, desired);
    const now = this.ctx.scheduler.now();
    const previous: Condition[] = current.status?.conditions ?? [];

    const conditions: Condition[] = [];
    const enough = available >= desired - maxUnavailable;
    conditions.push(
      enough
        ? condition(previous, 'Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.', now)
        : condition(previous, 'Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.', now),
    );
    const rsName = fresh?.rs.metadata.name ?? `${current.metadata.name}-${hash}`;
    const complete = fresh !== undefined && updated === desired && replicas === desired && available === desired;
    const ready = sum((v) => v.ready);
    let recheck: number | undefined;
    if (current.spec?.paused) {
      conditions.push(condition(previous, 'Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused', now));
    } else if (complete) {
      conditions.push(condition(previous, 'Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rsName}" has successfully progressed.`, now));
    } else {
      // As upstream: any step forward refreshes lastUpdateTime; none for progressDeadlineSeconds → ProgressDeadlineExceeded.
      const prev = current.status ?? {};
      const stepped =
        current.status?.observedGeneration !== current.metadata.generation ||
        updated > (prev.updatedReplicas ?? 0) ||
        ready > (prev.readyReplicas ?? 0) ||
        available > (prev.availableReplicas ?? 0) ||
        replicas - updated < (prev.replicas ?? 0) - (prev.updatedReplicas ?? 0);
      const old = previous.find((c) => c.type === 'Progressing');
      const since = stepped || !old?.lastUpdateTime || old.reason === 'NewReplicaSetAvailable' ? now : Date.parse(old.lastUpdateTime);
      const deadlineMs = Number(current.spec?.progressDeadlineSeconds ?? 600) * 1000;
      if (old?.reason === 'ProgressDeadlineExceeded' && !stepped) {
        conditions.push(old);
      } else if (now - since >= deadlineMs) {
        conditions.push(condition(previous, 'Progressing', 'False', 'ProgressDeadlineExceeded', `ReplicaSet "${rsName}" has timed out progressing.`, now));
      } else {
        const progressing = condition(previous, 'Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`, now);
        progressing.lastUpdateTime = isoTime(since);
        conditions.push(progressing);
        recheck = since + deadlineMs - now;
      }
    }
    const status: Record<string, unknown> = {
      observedGeneration: current.metadata.generation ?? 1,
      replicas,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: available,
      unavailableReplicas: Math.max(0, sum((v) => v.spec) - available),
      conditions,
    };
    writeStatus(this.ctx, this.ctx.types.deployments, current, status);
    const rechecks = views.map((v) => v.recheckInMs).filter((ms): ms is number => ms !== undefined);
    if (recheck !== undefined) rechecks.push(recheck);
    return rechecks.length > 0 ? Math.min(...rechecks) : undefined;
  }
}

/** maxSurge rounds up, maxUnavailable down; both 0 would deadlock, so Kubernetes then allows one unavailable. */
export function rollingBounds(deployment: KubeObject, desired: number): { maxSurge: number; maxUnavailable: number } {
  const ru = deployment.spec?.strategy?.rollingUpdate ?? {};
  if (deployment.spec?.strategy?.type === 'Recreate') return { maxSurge: 0, maxUnavailable: 0 };
  const maxSurge = scaledValue(ru.maxSurge, desired, true, '25%');
  let maxUnavailable = Math.min(scaledValue(ru.maxUnavailable, desired, false, '25%'), desired);
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

function revisionOf(rs: KubeObject): number {
  return Number(rs.metadata.annotations?.[REVISION] ?? 0) || 0;
}

/** A Deployment condition; lastUpdateTime moves when reason or message change, lastTransitionTime when status does. */
function condition(previous: Condition[], type: string, status: Condition['status'], reason: string, message: string, now: number): Condition {
  const old = previous.find((c) => c.type === type);
  const same = old && old.status === status;
  const unchanged = same && old.reason === reason && old.message === message;
  return {
    type,
    status,
    lastUpdateTime: unchanged && old.lastUpdateTime ? old.lastUpdateTime : isoTime(now),
    lastTransitionTime: same && old.lastTransitionTime ? old.lastTransitionTime : isoTime(now),
    reason,
    message,
  };
}
