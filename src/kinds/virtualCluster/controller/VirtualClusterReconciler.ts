import type { KubernetesObject, V1StatefulSet } from '@kubernetes/client-node';
import type { Informer } from '../../../controller/Informer.js';
import type { Reconciler, Request, Result } from '../../../controller/Controller.js';
import { EventType } from '../../../domain/events.js';
import { ConflictError, isAppError } from '../../../errors.js';
import { isRetriable } from '../../../kube/index.js';
import type { Logger } from '../../../log.js';
import type { RecordOnce } from '../../../controllers/RecordOnce.js';
import {
  ANNOTATION_LAST_UPGRADE,
  ANNOTATION_PROGRESS,
  ANNOTATION_ROLLOUT,
  DEFAULT_KEY_ALGORITHM,
  HASHED_SECRETS,
  LABEL_CLUSTER,
  LABEL_EXTERNAL_APISERVER_DOMAIN,
  LABEL_READY_FOR_UPGRADE,
  LABEL_VERSION_APPLIED,
  MESSAGE_UPGRADE_COMPLETED,
  PKI_SECRET_TYPES,
  REASON_UPGRADE_COMPLETED,
  REASON_UPGRADE_FAILED,
  REGENERATED_SECRETS,
  ROOT_CA_SECRET,
  type KeyAlgorithm,
  type UpgradeComponent,
} from './names.js';
import type { ControlPlaneApi } from './ControlPlaneApi.js';
import {
  applyBody,
  checkRolled,
  isClusterIP,
  lastUpgradeOf,
  progressOf,
  secretHash,
  specVersion,
  type ComponentTime,
  type LastUpgrade,
  type UpgradeOutcome,
  type UpgradeProgress,
} from './objects.js';
import { sharedPkiWorkers, type IssuePki } from './PkiWorkers.js';
import type { ClusterVersionObject, ComponentBundle, VirtualClusterObject } from './types.js';
import type { VirtualClusterMetrics } from './metrics.js';
import type { VcManagerGate } from './vcManagerGate.js';
import { VIRTUAL_CLUSTER_DEFAULTS } from '../settings.js';
import type { EventPayload } from '../../../domain/eventPayloads.js';

export interface VirtualClusterReconcilerOptions {
  /** Feature gate ClusterVersionPartialUpgrade; when off, the opt-in label is ignored (as upstream). Default true. */
  partialUpgrade?: boolean;
  /** How long one component's StatefulSet may take to roll. Default 10 min (upstream). */
  readyTimeoutMs?: number;
  /** Re-check interval while waiting (informer events usually come first). Default 2 s (upstream's poll). */
  pollIntervalMs?: number;
  keyAlgorithm?: KeyAlgorithm;
  /** Generates the cluster PKI. Default: generateClusterPki on the process's worker thread (sharedPkiWorkers), off the event loop. */
  issuePki?: IssuePki;
  /** Wall clock (ms since epoch); injectable for tests. */
  now?: () => number;
}

export interface VirtualClusterReconcilerDeps extends VirtualClusterReconcilerOptions {
  api: ControlPlaneApi;
  virtualClusters: Informer<VirtualClusterObject & KubernetesObject>;
  clusterVersions: Informer<ClusterVersionObject & KubernetesObject>;
  statefulSets: Informer<V1StatefulSet>;
  metrics: VirtualClusterMetrics;
  /** Upgrade outcomes between the VirtualCluster write that ends an upgrade and its ClusterUpgradeObserved event. */
  upgrades: RecordOnce<UpgradeRecord>;
  logger: Logger;
  /** Tells the rollout engine the cluster's state changed. */
  notify(namespace: string, name: string): void;
  /** The vc-manager beside rollplane: while its gate is on, it upgrades labelled clusters and rollplane does not. */
  gate?: Pick<VcManagerGate, 'upstreamUpgrades'>;
}

/**
 * An upgrade's end in flight (RecordOnce): noted before the write that ends it, recorded as ClusterUpgradeObserved once
 * the write is in. `finishedAt` is the write's own mark (last-upgrade annotation): the cluster shows whether it landed.
 */
export interface UpgradeRecord {
  startedAt: number;
  finishedAt: string;
  payload: EventPayload<'ClusterUpgradeObserved'>;
}

type Finish =
  | {
      outcome: 'SUCCEEDED' | 'ALREADY_APPLIED';
      resourceVersion: string;
      specVersion: string;
      startedAt: number;
      components: ComponentTime[];
      rootCaGenerated?: boolean;
    }
  | {
      outcome: 'FAILED';
      resourceVersion: string;
      specVersion: string;
      startedAt: number;
      components: ComponentTime[];
      error: string;
      rootCaGenerated?: boolean;
    };

const MAX_CONFLICT_RETRIES = 8;

/**
 * Upstream's ClusterVersionPartialUpgrade for one VirtualCluster, level-based and without blocking a worker: a Running
 * cluster labelled ready-for-upgrade gets its ClusterVersion's current spec, in upstream's order (ClusterIP apiserver
 * Service, PKI, apiserver, controller-manager; etcd untouched). The waits for each StatefulSet to roll are requeues;
 * the step in progress lives in an annotation on the VirtualCluster, so a restart or a new leader resumes it. The
 * applied marker is written only after success, together with the status and the removal of the opt-in label.
 */
export class VirtualClusterReconciler implements Reconciler {
  private readonly partialUpgrade: boolean;
  private readonly readyTimeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly keyAlgorithm: KeyAlgorithm;
  private readonly issuePki: IssuePki;
  private readonly now: () => number;

  constructor(private readonly deps: VirtualClusterReconcilerDeps) {
    this.partialUpgrade = deps.partialUpgrade ?? true;
    this.readyTimeoutMs = deps.readyTimeoutMs ?? VIRTUAL_CLUSTER_DEFAULTS.readyTimeoutMs;
    this.pollIntervalMs = deps.pollIntervalMs ?? VIRTUAL_CLUSTER_DEFAULTS.pollIntervalMs;
    this.keyAlgorithm = deps.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM;
    this.issuePki = deps.issuePki ?? sharedPkiWorkers.issue;
    this.now = deps.now ?? Date.now;
  }

  async reconcile(request: Request): Promise<Result | void> {
    const vc = this.deps.virtualClusters.get(request.namespace, request.name);
    const pending = this.deps.upgrades.get(request.namespace ?? '', request.name);
    if (pending) await this.settle(request.namespace ?? '', request.name, vc, pending);
    if (!this.partialUpgrade) return;
    if (!vc) return;
    const progress = progressOf(vc.metadata.annotations);
    if (vc.metadata.labels?.[LABEL_READY_FOR_UPGRADE] !== 'true') {
      // Opt-in withdrawn mid-upgrade: stop tracking (what was applied stays applied, nothing is marked).
      if (progress) await this.deps.api.patchVirtualClusterAnnotations(request.namespace!, request.name, { [ANNOTATION_PROGRESS]: null });
      return;
    }
    // Defer to the vc-manager (ADR 0018): it upgrades every labelled cluster itself; doing it too would upgrade twice.
    // An upgrade of ours in progress stops at its current step; the vc-manager re-applies everything once.
    if (this.deps.gate?.upstreamUpgrades()) return;
    if (vc.status?.phase !== 'Running') return;
    return progress ? this.resume(vc, progress) : this.start(vc);
  }

  /**
   * An upgrade's end noted before a restart (or a failed append): recorded when the cluster shows the end was written,
   * dropped when it shows it was not (the upgrade moved on, or the cluster is gone); left while the upgrade is still
   * in progress, for `finish` to end again.
   */
  private async settle(namespace: string, name: string, vc: VirtualClusterObject | undefined, pending: UpgradeRecord): Promise<void> {
    if (vc && lastUpgradeOf(vc.metadata.annotations)?.finishedAt === pending.finishedAt) {
      await this.deps.upgrades.record(namespace, name, () => ({ type: EventType.ClusterUpgradeObserved, payload: pending.payload }));
      this.deps.notify(namespace, name);
      return;
    }
    const inProgress = vc?.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true' && progressOf(vc.metadata.annotations)?.startedAt === pending.startedAt;
    if (!inProgress) await this.deps.upgrades.drop(namespace, name);
  }

  /** First reconcile of an upgrade: every write up to the apiserver StatefulSet, then wait for it to roll. */
  private async start(cached: VirtualClusterObject): Promise<Result | void> {
    const startedAt = this.now();
    // The cache may lag behind our own last write (e.g. the end of the previous upgrade): decide on a live read.
    const vc = await this.deps.api.getVirtualCluster(cached.metadata.namespace!, cached.metadata.name!);
    if (vc.metadata.labels?.[LABEL_READY_FOR_UPGRADE] !== 'true' || vc.status?.phase !== 'Running') return;
    const inProgress = progressOf(vc.metadata.annotations);
    if (inProgress) return this.resume(vc, inProgress);
    const cvName = vc.spec?.clusterVersionName ?? '';
    // A live read: the rollout driver may have changed the ClusterVersion an instant ago.
    const cv = await this.deps.api.findClusterVersion(cvName);
    const base = { resourceVersion: cv?.metadata.resourceVersion ?? '', specVersion: specVersion(cv?.spec), startedAt, components: [] as ComponentTime[] };
    if (!cv) return this.fail(vc, base, `clusterversion ${cvName} not found`);
    if (vc.metadata.labels?.[LABEL_VERSION_APPLIED] === base.resourceVersion) {
      return this.finish(vc, { ...base, outcome: 'ALREADY_APPLIED' }, undefined);
    }
    const spec = cv.spec ?? {};
    const clusterNs = vc.status?.clusterNamespace;
    if (!clusterNs) return this.fail(vc, base, 'the VirtualCluster has no status.clusterNamespace');
    const problem = specProblem(spec);
    if (problem) return this.fail(vc, base, problem);
    const apiServer = spec.apiServer!;

    try {
      const components: ComponentTime[] = [];
      let mark = this.now();
      const done = (component: UpgradeComponent) => {
        const t = this.now();
        components.push({ component, seconds: (t - mark) / 1000 });
        mark = t;
      };
      // 1. The ClusterIP apiserver Service first: its IP goes into the serving certificate.
      let clusterIP: string | undefined;
      if (isClusterIP(apiServer.service)) {
        const service = await this.deps.api.applyService(clusterNs, applyBody(apiServer.service!, clusterNs, { apiVersion: 'v1', kind: 'Service' }));
        clusterIP = service.spec?.clusterIP;
        done('apiserver-service');
      }
      // 2. PKI: keep root-ca, regenerate the rest.
      const pki = await this.regeneratePki(vc, spec, clusterNs, clusterIP);
      done('pki');
      // 3. etcd is not touched. 4. apiserver StatefulSet + Service.
      const sts = await this.deps.api.applyStatefulSet(
        clusterNs,
        this.statefulSetBody(apiServer, clusterNs, pki.hashes, HASHED_SECRETS.apiserver, base.resourceVersion),
      );
      if (apiServer.service && !isClusterIP(apiServer.service)) {
        await this.deps.api.applyService(clusterNs, applyBody(apiServer.service, clusterNs, { apiVersion: 'v1', kind: 'Service' }));
      }
      const progress: UpgradeProgress = {
        resourceVersion: base.resourceVersion,
        specVersion: base.specVersion,
        startedAt,
        step: 'apiserver',
        statefulSet: sts.metadata?.name ?? 'apiserver',
        stepStartedAt: mark,
        generation: sts.metadata?.generation ?? 0,
        components,
        controllerManagerHashes: Object.fromEntries(HASHED_SECRETS['controller-manager'].map((s) => [s, pki.hashes[s]!])),
        rootCaGenerated: pki.rootCaGenerated,
      };
      await this.writeProgress(vc, undefined, progress);
      return { requeueAfterMs: this.pollIntervalMs };
    } catch (error) {
      if (isRetriable(error)) throw error; // transient or a concurrent change: the queue retries the whole start
      return this.fail(vc, base, describe(error));
    }
  }

  /** A later reconcile: is the StatefulSet of the current step rolled? Then the next step, or the end. */
  private async resume(vc: VirtualClusterObject, progress: UpgradeProgress): Promise<Result | void> {
    const clusterNs = vc.status?.clusterNamespace ?? '';
    const base = {
      resourceVersion: progress.resourceVersion,
      specVersion: progress.specVersion,
      startedAt: progress.startedAt,
      components: progress.components,
      rootCaGenerated: progress.rootCaGenerated,
    };
    const now = this.now();
    const stsName = progress.statefulSet ?? progress.step;
    const check = checkRolled(this.deps.statefulSets.get(clusterNs, stsName), progress.generation);
    if (check.state === 'error') return this.fail(vc, base, check.reason);
    if (check.state === 'waiting') {
      const sts = this.deps.statefulSets.get(clusterNs, stsName);
      if (sts && check.stuckPods) await this.deps.api.deleteStuckPods(sts);
      const remaining = progress.stepStartedAt + this.readyTimeoutMs - now;
      if (remaining <= 0) {
        return this.fail(
          vc,
          base,
          `timed out after ${formatDuration(this.readyTimeoutMs)} waiting for StatefulSet ${clusterNs}/${stsName} to roll: ${check.reason}`,
        );
      }
      return { requeueAfterMs: Math.min(this.pollIntervalMs, remaining + 1) };
    }
    const components = [...progress.components, { component: progress.step, seconds: (now - progress.stepStartedAt) / 1000 }];
    if (progress.step === 'controller-manager') return this.finish(vc, { ...base, components, outcome: 'SUCCEEDED' }, progress);

    const cv = await this.clusterVersionAt(vc.spec?.clusterVersionName ?? '', progress.resourceVersion);
    if (!cv) {
      // The ClusterVersion changed mid-upgrade: start over with its new spec.
      this.deps.logger.info({ cluster: `${vc.metadata.namespace}/${vc.metadata.name}` }, 'ClusterVersion changed during the upgrade; restarting it');
      await this.deps.api.patchVirtualClusterAnnotations(vc.metadata.namespace!, vc.metadata.name!, { [ANNOTATION_PROGRESS]: null });
      return;
    }
    const controllerManager = cv.spec?.controllerManager;
    if (!controllerManager?.statefulset) return this.finish(vc, { ...base, components, outcome: 'SUCCEEDED' }, progress);
    // Our cache of the VirtualCluster may not show the controller-manager step we already recorded: its StatefulSet
    // carries this upgrade's marks already, so wait for the cache instead of applying it again.
    const applied = this.deps.statefulSets.get(clusterNs, controllerManager.statefulset.metadata?.name ?? 'controller-manager');
    const marks = applied?.spec?.template?.metadata?.annotations ?? {};
    if (
      applied?.metadata?.labels?.[LABEL_VERSION_APPLIED] === progress.resourceVersion &&
      Object.entries(progress.controllerManagerHashes).every(([secret, hash]) => marks[`${secret}-hash`] === hash)
    ) {
      return { requeueAfterMs: this.pollIntervalMs };
    }
    try {
      const stepStartedAt = this.now();
      const sts = await this.deps.api.applyStatefulSet(
        clusterNs,
        this.statefulSetBody(controllerManager, clusterNs, progress.controllerManagerHashes, HASHED_SECRETS['controller-manager'], progress.resourceVersion),
      );
      const next: UpgradeProgress = {
        ...progress,
        step: 'controller-manager',
        statefulSet: sts.metadata?.name ?? 'controller-manager',
        stepStartedAt,
        generation: sts.metadata?.generation ?? 0,
        components,
      };
      await this.writeProgress(vc, progress, next);
      return { requeueAfterMs: this.pollIntervalMs };
    } catch (error) {
      if (isRetriable(error)) throw error;
      return this.fail(vc, { ...base, components }, describe(error));
    }
  }

  /** The ClusterVersion at `resourceVersion` (cache first, then a live read); undefined when it has moved on. */
  private async clusterVersionAt(name: string, resourceVersion: string): Promise<ClusterVersionObject | undefined> {
    const cached = this.deps.clusterVersions.get(undefined, name);
    if (cached?.metadata.resourceVersion === resourceVersion) return cached;
    const live = await this.deps.api.findClusterVersion(name);
    return live?.metadata.resourceVersion === resourceVersion ? live : undefined;
  }

  private async regeneratePki(vc: VirtualClusterObject, spec: NonNullable<ClusterVersionObject['spec']>, clusterNs: string, clusterIP: string | undefined) {
    const existing = await this.deps.api.readSecrets(clusterNs);
    const root = existing.get(ROOT_CA_SECRET);
    const apiService = spec.apiServer?.service;
    const etcd = spec.etcd?.statefulset;
    const pki = await this.issuePki(
      {
        clusterName: vc.metadata.name ?? '',
        clusterNamespace: clusterNs,
        clusterDomain: vc.spec?.clusterDomain,
        ...(vc.metadata.labels?.[LABEL_EXTERNAL_APISERVER_DOMAIN] !== undefined
          ? { externalApiserverDomain: vc.metadata.labels[LABEL_EXTERNAL_APISERVER_DOMAIN] }
          : {}),
        expireDays: vc.spec?.pkiExpireDays,
        apiserverServiceName: apiService?.metadata?.name ?? 'apiserver-svc',
        apiserverPort: Number(apiService?.spec?.ports?.[0]?.port ?? 6443),
        ...(clusterIP ? { apiserverClusterIP: clusterIP } : {}),
        etcdServiceName: spec.etcd?.service?.metadata?.name ?? 'etcd',
        etcdStatefulSetName: etcd?.metadata?.name ?? 'etcd',
        etcdReplicas: Number(etcd?.spec?.replicas ?? 1),
        ...(root ? { rootCaData: root.data } : {}),
      },
      { keyAlgorithm: this.keyAlgorithm },
    );
    const hashes: Record<string, string> = { [ROOT_CA_SECRET]: secretHash(pki.rootCa) };
    const writes: Promise<unknown>[] = [];
    if (pki.rootCaGenerated) {
      this.deps.logger.warn(
        { cluster: `${vc.metadata.namespace}/${vc.metadata.name}`, problem: pki.rootCaProblem },
        'root-ca was not a usable CA; generated a new root CA',
      );
    } else if (pki.rootCaReencoded) {
      this.deps.logger.info(
        { cluster: `${vc.metadata.namespace}/${vc.metadata.name}` },
        'root-ca key re-encoded as PKCS#1 (same key) so that the vc-manager can read it',
      );
    }
    if (pki.rootCaGenerated || pki.rootCaReencoded) {
      writes.push(this.deps.api.applySecret(clusterNs, ROOT_CA_SECRET, root?.type ?? PKI_SECRET_TYPES[ROOT_CA_SECRET]!, pki.rootCa));
    }
    for (const name of REGENERATED_SECRETS) {
      const data = pki.secrets[name]!;
      hashes[name] = secretHash(data);
      // The type is immutable: keep the existing secret's. Each write is independent, so they go out together.
      writes.push(this.deps.api.applySecret(clusterNs, name, existing.get(name)?.type ?? PKI_SECRET_TYPES[name]!, data));
    }
    await Promise.all(writes);
    return { hashes, rootCaGenerated: pki.rootCaGenerated };
  }

  private statefulSetBody(bundle: ComponentBundle, namespace: string, hashes: Record<string, string>, hashed: readonly string[], resourceVersion: string) {
    const body = applyBody(bundle.statefulset!, namespace, { apiVersion: 'apps/v1', kind: 'StatefulSet' });
    const template = body.spec?.template ?? {};
    const annotations = { ...template.metadata?.annotations };
    for (const secret of hashed) annotations[`${secret}-hash`] = hashes[secret]!;
    // Upstream's complement*Template labels the pods with their cluster; the apply must carry it too, or server-side
    // apply (same field manager as upstream's) removes the label upstream set at creation.
    const labels = { ...template.metadata?.labels, [LABEL_CLUSTER]: namespace };
    return {
      ...body,
      metadata: { ...body.metadata, labels: { ...body.metadata?.labels, [LABEL_VERSION_APPLIED]: resourceVersion } },
      spec: { ...body.spec, template: { ...template, metadata: { ...template.metadata, labels, annotations } } },
    };
  }

  private fail(vc: VirtualClusterObject, base: Omit<Finish, 'outcome' | 'error'>, error: string): Promise<void> {
    return this.finish(vc, { ...base, outcome: 'FAILED', error }, progressOf(vc.metadata.annotations));
  }

  /**
   * Records the next step. Optimistic (the object's resourceVersion), so that a reconcile working from a stale cache
   * never overwrites a newer step: on a conflict the live object is re-read, and the write is retried only while it
   * still shows the step this one moves on from (`from`; none when starting).
   */
  private async writeProgress(vc: VirtualClusterObject, from: UpgradeProgress | undefined, next: UpgradeProgress): Promise<void> {
    let current = vc;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.deps.api.replaceVirtualCluster({
          ...current,
          metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [ANNOTATION_PROGRESS]: JSON.stringify(next) } },
        });
        return;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= MAX_CONFLICT_RETRIES) throw error;
      }
      current = await this.deps.api.getVirtualCluster(vc.metadata.namespace!, vc.metadata.name!);
      const live = progressOf(current.metadata.annotations);
      const unchanged = current.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true' && live?.startedAt === from?.startedAt && live?.step === from?.step;
      if (!unchanged) throw new ConflictError(`VirtualCluster ${vc.metadata.namespace}/${vc.metadata.name} changed during the upgrade step; re-evaluating`);
    }
  }

  /**
   * Ends the upgrade in one write (retried on conflict): status reason and message, the applied marker on success,
   * the opt-in label and the progress removed, the outcome recorded for the rollout driver. Then the metrics and the
   * ClusterUpgradeObserved event.
   */
  private async finish(vc: VirtualClusterObject, result: Finish, expected: UpgradeProgress | undefined): Promise<void> {
    const namespace = vc.metadata.namespace!;
    const name = vc.metadata.name!;
    const seconds = Math.max(0, (this.now() - result.startedAt) / 1000);
    const error = result.outcome === 'FAILED' ? result.error : null;
    const finishedAt = new Date(this.now()).toISOString();
    const clusterVersion = vc.spec?.clusterVersionName ?? '';
    const payload = {
      cluster: `${namespace}/${name}`,
      clusterVersion,
      resourceVersion: result.resourceVersion,
      specVersion: result.specVersion,
      seconds,
      outcome: result.outcome satisfies UpgradeOutcome,
      components: result.components,
      error,
      ...(result.rootCaGenerated ? { rootCaGenerated: true } : {}),
    };
    let rolloutId: string | null = null;
    let intended = false;
    for (let attempt = 0; ; attempt++) {
      const current = attempt === 0 ? vc : await this.deps.api.getVirtualCluster(namespace, name);
      // Someone (another reconcile on a stale cache, a user) already ended or changed this upgrade: nothing to record.
      if (current.metadata.labels?.[LABEL_READY_FOR_UPGRADE] !== 'true' || progressOf(current.metadata.annotations)?.startedAt !== expected?.startedAt) return;
      rolloutId = current.metadata.annotations?.[ANNOTATION_ROLLOUT] ?? rolloutId;
      const last: LastUpgrade = {
        resourceVersion: result.resourceVersion,
        specVersion: result.specVersion,
        outcome: result.outcome,
        error,
        finishedAt,
        rolloutId,
      };
      const labels = { ...current.metadata.labels };
      delete labels[LABEL_READY_FOR_UPGRADE];
      if (result.outcome !== 'FAILED') labels[LABEL_VERSION_APPLIED] = result.resourceVersion;
      const annotations: Record<string, string> = { ...current.metadata.annotations, [ANNOTATION_LAST_UPGRADE]: JSON.stringify(last) };
      delete annotations[ANNOTATION_PROGRESS];
      delete annotations[ANNOTATION_ROLLOUT];
      const failed = result.outcome === 'FAILED';
      const reason = failed ? REASON_UPGRADE_FAILED : REASON_UPGRADE_COMPLETED;
      const message = failed ? `fail to upgrade: ${error}` : MESSAGE_UPGRADE_COMPLETED;
      const updated: VirtualClusterObject = {
        ...current,
        metadata: { ...current.metadata, labels, annotations },
        status: { ...current.status, reason, message, conditions: withCondition(current.status?.conditions, reason, message, this.now()) },
      };
      // Durable before the write: a restart right after it still records the event, with this rollout id.
      if (!intended || this.deps.upgrades.rolloutOf(namespace, name) !== rolloutId) {
        await this.deps.upgrades.intend(namespace, name, { rolloutId, startedAt: result.startedAt, finishedAt, payload });
        intended = true;
      }
      try {
        await this.deps.api.replaceVirtualCluster(updated);
        break;
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt >= MAX_CONFLICT_RETRIES) throw e;
      }
    }

    const labels = { cluster_version: clusterVersion, resource_version: result.resourceVersion };
    this.deps.metrics.seconds.observe(labels, seconds);
    if (result.outcome === 'FAILED') this.deps.metrics.failed.inc(labels);
    else this.deps.metrics.upgraded.inc(labels);
    await this.deps.upgrades.record(namespace, name, () => ({ type: EventType.ClusterUpgradeObserved, payload }));
    this.deps.notify(namespace, name);
  }
}

/**
 * Upstream's SetVCStatus condition: no `type`; a condition with the same reason and status True only has its
 * lastTransitionTime refreshed (its message stays), otherwise one is appended.
 */
export function withCondition(conditions: unknown[] | undefined, reason: string, message: string, now: number): unknown[] {
  const stamp = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z'); // metav1.Time: RFC 3339, seconds
  const out = (conditions ?? []).map((c) => (typeof c === 'object' && c !== null ? { ...(c as Record<string, unknown>) } : c));
  const same = out.find(
    (c): c is Record<string, unknown> =>
      typeof c === 'object' && c !== null && (c as Record<string, unknown>).reason === reason && (c as Record<string, unknown>).status === 'True',
  );
  if (same) same.lastTransitionTime = stamp;
  else out.push({ lastTransitionTime: stamp, reason, message, status: 'True' });
  return out;
}

/** Why a ClusterVersion spec cannot be applied by a partial upgrade, if it cannot. */
function specProblem(spec: NonNullable<ClusterVersionObject['spec']>): string | undefined {
  if (!spec.apiServer?.statefulset) return 'the ClusterVersion has no apiServer statefulset';
  for (const [component, bundle] of [
    ['apiServer', spec.apiServer],
    ['controllerManager', spec.controllerManager],
  ] as const) {
    if (bundle?.statefulset?.spec?.updateStrategy?.type === 'OnDelete') {
      return `${component} StatefulSet uses the OnDelete update strategy; it would never roll (use RollingUpdate)`;
    }
  }
  return undefined;
}

function describe(error: unknown): string {
  return isAppError(error) || error instanceof Error ? error.message : String(error);
}

function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
