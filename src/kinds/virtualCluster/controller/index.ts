/**
 * The VIRTUAL_CLUSTER rollout kind: upstream's ClusterVersionPartialUpgrade reconciler (VirtualClusterReconciler), the
 * rollout driver (VirtualClusterDriver) and the cache-backed queries the API reads.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller } from '../../../controller/Controller.js';
import { feed } from '../../../controller/sources.js';
import type { VirtualClusterQueries } from '../plan.js';
import type { ControllerHost } from '../../../controllers/host.js';
import { kindHost } from '../../../controllers/kindHost.js';
import { CV_PLURAL, DEFAULT_KEY_ALGORITHM, ECDSA_WARNING, LABEL_READY_FOR_UPGRADE, TENANCY_GROUP, TENANCY_VERSION, VC_PLURAL } from './names.js';
import { VcManagerGate, type VcManagerRef } from './vcManagerGate.js';
import { ControlPlaneApi } from './ControlPlaneApi.js';
import { virtualClusterQueries } from './queries.js';
import type { ClusterVersionObject, VirtualClusterObject } from './types.js';
import { VirtualClusterReconciler, type VirtualClusterReconcilerOptions, type UpgradeRecord } from './VirtualClusterReconciler.js';
import { virtualClusterMetrics } from './metrics.js';
import { VirtualClusterDriver } from './VirtualClusterDriver.js';
import { VIRTUAL_CLUSTER_DEFAULTS } from '../settings.js';

export { UPGRADE_SECONDS_BUCKETS } from './metrics.js';
export * from './names.js';

export interface VirtualClusterOptions extends VirtualClusterReconcilerOptions {
  /** Concurrent upgrade reconciles (each is short: waits are requeues). Default 10. */
  workers?: number;
  /** The CAPN vc-manager Deployment whose gate decides who upgrades (ADR 0018); null: none. Default vc-manager/vc-manager. */
  vcManager?: VcManagerRef | null;
}

/** The configuration table's default (src/config.ts). */
export const DEFAULT_VC_MANAGER: VcManagerRef | null = VIRTUAL_CLUSTER_DEFAULTS.vcManager;

export interface VirtualClusterRuntime {
  driver: VirtualClusterDriver;
  queries: VirtualClusterQueries;
  controller: Controller;
}

type VC = VirtualClusterObject & KubernetesObject;
type CV = ClusterVersionObject & KubernetesObject;

const CLUSTER_NAMESPACE_INDEX = 'clusterNamespace';

const clusterRef = (vc: VC) => ({ namespace: vc.metadata.namespace ?? '', name: vc.metadata.name ?? '' });

export function setupVirtualClusters(controllerHost: ControllerHost, options: VirtualClusterOptions = {}): VirtualClusterRuntime {
  const host = kindHost(controllerHost, 'VIRTUAL_CLUSTER');
  const { clients } = host;
  const tenancy = { group: TENANCY_GROUP, version: TENANCY_VERSION };
  const virtualClusters = host.informers.custom<VC>(
    { ...tenancy, plural: VC_PLURAL },
    { [CLUSTER_NAMESPACE_INDEX]: (vc) => (vc.status?.clusterNamespace ? [vc.status.clusterNamespace] : []) },
  );
  const clusterVersions = host.informers.custom<CV>({ ...tenancy, plural: CV_PLURAL });
  const statefulSets = host.informers.statefulSets();

  // Only the vc-manager's namespace is watched; the Deployment is picked out by name (ADR 0018).
  const vcManager = options.vcManager === undefined ? DEFAULT_VC_MANAGER : options.vcManager;
  const vcManagerDeployments = vcManager ? host.informers.deployments('vc-manager-deployments', { namespace: vcManager.namespace }) : undefined;
  const gate = new VcManagerGate(vcManager, vcManagerDeployments);
  if ((options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM) === 'ecdsa-p256') host.logger.warn({ controller: 'virtualcluster-upgrade' }, ECDSA_WARNING);

  const api = new ControlPlaneApi(clients);
  // Every change of a cluster tells the engine at once: its observation reads the whole object.
  const notifier = host.notifier();
  const upgrades = host.history.once<UpgradeRecord>();
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
    notify: (namespace, name) => notifier.notify({ namespace, name }),
    gate,
  });
  const controller = host.controller({ name: 'virtualcluster-upgrade', reconciler, workers: workers ?? VIRTUAL_CLUSTER_DEFAULTS.workers });
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
    notifier.watch(vcManagerDeployments, (d) => (d.metadata?.name !== vcManager!.name ? [] : virtualClusters.list().map(clusterRef)));
  }
  notifier.watch(virtualClusters, (vc) => [clusterRef(vc)]);

  return {
    driver: new VirtualClusterDriver({ api, virtualClusters, clusterVersions, gate, upgrades }),
    queries: virtualClusterQueries({ virtualClusters, clusterVersions, partialUpgrade: options.partialUpgrade ?? true, vcManager: gate, api }),
    controller,
  };
}
