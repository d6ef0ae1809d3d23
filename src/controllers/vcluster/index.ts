/**
 * The VIRTUAL_CLUSTER rollout kind: upstream's ClusterVersionPartialUpgrade reconciler (VirtualClusterReconciler), the
 * rollout driver (VirtualClusterDriver) and the cache-backed queries the API reads.
 */
import type { KubernetesObject, V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import type { Controller } from '../../controller/Controller.js';
import { feed } from '../../controller/sources.js';
import type { VirtualClusterQueries } from '../../domain/virtualClusters.js';
import type { ControllerHost } from '../host.js';
import { CV_PLURAL, DEFAULT_KEY_ALGORITHM, ECDSA_WARNING, LABEL_READY_FOR_UPGRADE, TENANCY_GROUP, TENANCY_VERSION, VC_PLURAL } from './names.js';
import { VcManagerGate, type VcManagerRef } from './vcManagerGate.js';
import { ControlPlaneApi } from './ControlPlaneApi.js';
import { virtualClusterQueries } from './queries.js';
import type { ClusterVersionObject, VirtualClusterObject } from './types.js';
import { VirtualClusterReconciler, type VirtualClusterReconcilerOptions, type UpgradeRecord } from './VirtualClusterReconciler.js';
import { RecordOnce } from '../RecordOnce.js';
import { virtualClusterMetrics } from './metrics.js';
import { VirtualClusterDriver } from './VirtualClusterDriver.js';
import { CONFIG_DEFAULTS } from '../../config.js';

export { UPGRADE_SECONDS_BUCKETS } from './metrics.js';
export * from './names.js';

export interface VirtualClusterOptions extends VirtualClusterReconcilerOptions {
  /** Concurrent upgrade reconciles (each is short: waits are requeues). Default 10. */
  workers?: number;
  /** The CAPN vc-manager Deployment whose gate decides who upgrades (ADR 0018); null: none. Default vc-manager/vc-manager. */
  vcManager?: VcManagerRef | null;
}

/** The configuration table's default (src/config.ts). */
export const DEFAULT_VC_MANAGER: VcManagerRef | null = CONFIG_DEFAULTS.virtualClusters.vcManager;

export interface VirtualClusterRuntime {
  driver: VirtualClusterDriver;
  queries: VirtualClusterQueries;
  controller: Controller;
}

type VC = VirtualClusterObject & KubernetesObject;
type CV = ClusterVersionObject & KubernetesObject;

const CLUSTER_NAMESPACE_INDEX = 'clusterNamespace';

export function setupVirtualClusters(host: ControllerHost, options: VirtualClusterOptions = {}): VirtualClusterRuntime {
  const { clients } = host;
  const tenancy = { group: TENANCY_GROUP, version: TENANCY_VERSION };
  const virtualClusters = host.informer<VC>({
    name: VC_PLURAL,
    path: `/apis/${TENANCY_GROUP}/${TENANCY_VERSION}/${VC_PLURAL}`,
    list: () => clients.custom.listClusterCustomObject({ ...tenancy, plural: VC_PLURAL }),
    indexers: { [CLUSTER_NAMESPACE_INDEX]: (vc) => (vc.status?.clusterNamespace ? [vc.status.clusterNamespace] : []) },
  });
  const clusterVersions = host.informer<CV>({
    name: CV_PLURAL,
    path: `/apis/${TENANCY_GROUP}/${TENANCY_VERSION}/${CV_PLURAL}`,
    list: () => clients.custom.listClusterCustomObject({ ...tenancy, plural: CV_PLURAL }),
  });
  const statefulSets = host.informer<V1StatefulSet>({
    name: 'statefulsets',
    path: '/apis/apps/v1/statefulsets',
    list: () => clients.apps.listStatefulSetForAllNamespaces(),
  });

  // Only the vc-manager's namespace is watched; the Deployment is picked out by name (ADR 0018).
  const vcManager = options.vcManager === undefined ? DEFAULT_VC_MANAGER : options.vcManager;
  const vcManagerDeployments = vcManager
    ? host.informer<V1Deployment>({
        name: 'vc-manager-deployments',
        path: `/apis/apps/v1/namespaces/${vcManager.namespace}/deployments`,
        list: (page) => clients.apps.listNamespacedDeployment({ namespace: vcManager.namespace, ...page }),
      })
    : undefined;
  const gate = new VcManagerGate(vcManager, vcManagerDeployments);
  if ((options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM) === 'ecdsa-p256') host.logger.warn({ controller: 'virtualcluster-upgrade' }, ECDSA_WARNING);

  const api = new ControlPlaneApi(clients);
  const notify = (namespace: string, name: string) => host.notifyTargetChanged('VIRTUAL_CLUSTER', namespace, name);
  const upgrades = new RecordOnce<UpgradeRecord>(host.inFlight, 'VIRTUAL_CLUSTER');
  const { workers, vcManager: _vcManager, ...reconcilerOptions } = options;
  const reconciler = new VirtualClusterReconciler({
    ...reconcilerOptions,
    api,
    virtualClusters,
    clusterVersions,
    statefulSets,
    metrics: virtualClusterMetrics(host.registry),
    upgrades,
    logger: host.logger.child({ controller: 'virtualcluster-upgrade' }),
    notify,
    gate,
  });
  const controller = host.controller({ name: 'virtualcluster-upgrade', reconciler, workers: workers ?? CONFIG_DEFAULTS.virtualClusters.workers });
  feed(virtualClusters, controller);
  // A control-plane StatefulSet's rollout progress wakes the cluster whose namespace it lives in.
  feed(statefulSets, controller, {
    map: (sts) =>
      virtualClusters
        .byIndex(CLUSTER_NAMESPACE_INDEX, sts.metadata?.namespace ?? '')
        .map((vc) => ({ namespace: vc.metadata.namespace, name: vc.metadata.name! })),
  });
  // The gate turned off (or the vc-manager went away): labelled clusters are rollplane's to upgrade again.
  if (vcManagerDeployments) {
    feed(vcManagerDeployments, controller, {
      map: (d) =>
        d.metadata?.name !== vcManager!.name
          ? []
          : virtualClusters
              .list()
              .filter((vc) => vc.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true')
              .map((vc) => ({ namespace: vc.metadata.namespace, name: vc.metadata.name! })),
    });
    const wake = (d: V1Deployment) => {
      if (d.metadata?.name !== vcManager!.name) return;
      for (const vc of virtualClusters.list()) notify(vc.metadata.namespace ?? '', vc.metadata.name ?? '');
    };
    vcManagerDeployments.addEventHandler({ onAdd: wake, onUpdate: (_old, d) => wake(d), onDelete: wake });
  }
  virtualClusters.addEventHandler({
    onAdd: (vc) => notify(vc.metadata.namespace ?? '', vc.metadata.name ?? ''),
    onUpdate: (_old, vc) => notify(vc.metadata.namespace ?? '', vc.metadata.name ?? ''),
    onDelete: (vc) => notify(vc.metadata.namespace ?? '', vc.metadata.name ?? ''),
  });

  return {
    driver: new VirtualClusterDriver({ api, virtualClusters, clusterVersions, gate, upgrades }),
    queries: virtualClusterQueries({ virtualClusters, clusterVersions, partialUpgrade: options.partialUpgrade ?? true, vcManager: gate, api }),
    controller,
  };
}
