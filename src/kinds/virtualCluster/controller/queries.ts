import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from '../../../controller/Informer.js';
import type { ClusterVersionView, VirtualClusterQueries, VirtualClusterView } from '../plan.js';
import { ANNOTATION_PROGRESS, LABEL_READY_FOR_UPGRADE, LABEL_VERSION_APPLIED } from './names.js';
import { lastUpgradeOf, specVersion } from './objects.js';
import type { ClusterVersionObject, VirtualClusterObject } from './types.js';
import type { VcManagerGate } from './vcManagerGate.js';
import type { ControlPlaneApi } from './ControlPlaneApi.js';
import { refusal } from '../../../controllers/dryRunRefusal.js';
import { AppError, ErrorCode, isAppError } from '../../../errors.js';

type Cached<T> = T & KubernetesObject;

function firstImage(bundle: { statefulset?: { spec?: Record<string, any> } } | undefined): string | null {
  const image = bundle?.statefulset?.spec?.template?.spec?.containers?.[0]?.image;
  return typeof image === 'string' ? image : null;
}

export function clusterVersionView(cv: ClusterVersionObject): ClusterVersionView {
  return {
    name: cv.metadata.name ?? '',
    resourceVersion: cv.metadata.resourceVersion ?? '',
    specVersion: specVersion(cv.spec),
    apiServerImage: firstImage(cv.spec?.apiServer),
    controllerManagerImage: firstImage(cv.spec?.controllerManager),
    etcdImage: firstImage(cv.spec?.etcd),
    spec: (cv.spec ?? {}) as Record<string, unknown>,
  };
}

/**
 * The spec version a cluster runs, when it can be known: the one its last successful upgrade recorded for the
 * resourceVersion it has applied, else the ClusterVersion's current spec when it has applied the current version.
 */
export function appliedSpecVersion(vc: VirtualClusterObject, cv: ClusterVersionObject | undefined): string | null {
  const applied = vc.metadata.labels?.[LABEL_VERSION_APPLIED];
  if (!applied) return null;
  const last = lastUpgradeOf(vc.metadata.annotations);
  if (last && last.outcome !== 'FAILED' && last.resourceVersion === applied) return last.specVersion;
  if (cv && cv.metadata.resourceVersion === applied) return specVersion(cv.spec);
  return null;
}

export function virtualClusterView(vc: VirtualClusterObject, cv: ClusterVersionObject | undefined): VirtualClusterView {
  const applied = vc.metadata.labels?.[LABEL_VERSION_APPLIED] ?? null;
  return {
    namespace: vc.metadata.namespace ?? '',
    name: vc.metadata.name ?? '',
    clusterVersionName: vc.spec?.clusterVersionName ?? '',
    phase: vc.status?.phase || null,
    clusterNamespace: vc.status?.clusterNamespace ?? null,
    reason: vc.status?.reason ?? null,
    message: vc.status?.message ?? null,
    appliedResourceVersion: applied,
    appliedSpecVersion: appliedSpecVersion(vc, cv),
    upToDate: applied !== null && cv !== undefined && applied === cv.metadata.resourceVersion,
    readyForUpgrade: vc.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true',
    upgrading: Boolean(vc.metadata.annotations?.[ANNOTATION_PROGRESS]),
  };
}

/** VirtualClusterQueries from the informer caches (cheap: no API call). */
export interface VirtualClusterQueriesDeps {
  virtualClusters: Informer<Cached<VirtualClusterObject>>;
  clusterVersions: Informer<Cached<ClusterVersionObject>>;
  /** Feature gate ClusterVersionPartialUpgrade of rollplane's own reconciler. */
  partialUpgrade: boolean;
  vcManager?: VcManagerGate;
  /** For the preflight's dry run of the first write a rollout makes to a cluster. */
  api?: Pick<ControlPlaneApi, 'optInToUpgrade'>;
}

/** VirtualClusterQueries over the informer caches: no API call per query. */
export function virtualClusterQueries(deps: VirtualClusterQueriesDeps): VirtualClusterQueries {
  return new CachedVirtualClusterQueries(deps);
}

class CachedVirtualClusterQueries implements VirtualClusterQueries {
  private readonly virtualClustersCache: Informer<Cached<VirtualClusterObject>>;
  private readonly clusterVersionsCache: Informer<Cached<ClusterVersionObject>>;
  private readonly gate: boolean;
  private readonly vcManager: VcManagerGate | undefined;

  constructor(private readonly deps: VirtualClusterQueriesDeps) {
    this.virtualClustersCache = deps.virtualClusters;
    this.clusterVersionsCache = deps.clusterVersions;
    this.gate = deps.partialUpgrade;
    this.vcManager = deps.vcManager;
  }

  partialUpgradeEnabled(): boolean {
    return this.gate;
  }

  upstreamUpgrades(): string | undefined {
    return this.vcManager?.upstreamUpgrades();
  }

  /**
   * Dry-runs the opt-in label on the first target (issue 27): the CAPN vc-manager registers a validating webhook over
   * every VirtualCluster operation with failurePolicy Fail and never removes it, so a vc-manager scaled to 0 (or
   * crashing) leaves every VirtualCluster write refused — "replicas 0" is not "gone".
   */
  async preflight(targets: readonly { namespace: string; name: string }[]): Promise<void> {
    const first = targets[0];
    if (!first || !this.deps.api) return;
    try {
      await this.deps.api.optInToUpgrade(first.namespace, first.name, 'preflight', { dryRun: true });
    } catch (error) {
      if (isAppError(error) && error.code === ErrorCode.NotFound) return; // deleted meanwhile: its target fails later
      const refused = refusal(error, { virtualCluster: `${first.namespace}/${first.name}` });
      const scaledDown = this.vcManager?.scaledToZero();
      const why =
        scaledDown && refused.message.includes('failed calling webhook')
          ? `: the vc-manager Deployment ${scaledDown} is scaled to 0, but the ValidatingWebhookConfiguration it registered (failurePolicy Fail, never removed) still sends every VirtualCluster write to it; scale the vc-manager back up, or delete that configuration if the vc-manager is gone for good`
          : '';
      throw new AppError(refused.code, `refused before anything was written: ${refused.message}${why}`, {
        details: { ...refused.details, ...(scaledDown ? { vcManager: scaledDown } : {}) },
      });
    }
  }

  async virtualClusters(): Promise<VirtualClusterView[]> {
    return this.virtualClustersCache.list().map((vc) => this.view(vc));
  }

  async virtualCluster(namespace: string, name: string): Promise<VirtualClusterView | undefined> {
    const vc = this.virtualClustersCache.get(namespace, name);
    return vc ? this.view(vc) : undefined;
  }

  async clusterVersions(): Promise<ClusterVersionView[]> {
    return this.clusterVersionsCache.list().map(clusterVersionView);
  }

  async clusterVersion(name: string): Promise<ClusterVersionView | undefined> {
    const cv = this.clusterVersionsCache.get(undefined, name);
    return cv ? clusterVersionView(cv) : undefined;
  }

  /**
   * Clusters behind their ClusterVersion, for the `drift` query (through the kind module's drift port, ADR 0045):
   * versions are ClusterVersion resourceVersions, as upstream records them.
   */
  async driftItems(): Promise<
    { kind: 'VIRTUAL_CLUSTER'; namespace: string; name: string; desiredVersion: string | null; runningVersion: string | null; since: Date | null }[]
  > {
    return this.virtualClustersCache
      .list()
      .map((vc) => ({ vc, cv: this.clusterVersionsCache.get(undefined, vc.spec?.clusterVersionName ?? '') }))
      .filter(({ vc, cv }) => cv && vc.metadata.labels?.[LABEL_VERSION_APPLIED] !== cv.metadata.resourceVersion)
      .map(({ vc, cv }) => ({
        kind: 'VIRTUAL_CLUSTER' as const,
        namespace: vc.metadata.namespace ?? '',
        name: vc.metadata.name ?? '',
        desiredVersion: cv!.metadata.resourceVersion ?? null,
        runningVersion: vc.metadata.labels?.[LABEL_VERSION_APPLIED] ?? null,
        since: null,
      }));
  }

  private view(vc: VirtualClusterObject): VirtualClusterView {
    return virtualClusterView(vc, this.clusterVersionsCache.get(undefined, vc.spec?.clusterVersionName ?? ''));
  }
}
