import { ApiException, type KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { RolloutKind } from '../domain/events.js';

/**
 * Which rollout kinds a member cluster has, from its discovery documents (`/apis/<group>/<version>`: every
 * authenticated user may read them, unlike the CustomResourceDefinitions): a kind is there when every resource its
 * controllers watch is served. A Harvester cluster without the vm-dhcp-controller has no IPPools, so no agent pools.
 * The kind modules will declare these themselves once they are keyed by cluster (issue 29, second half).
 */
export const KIND_RESOURCES: { readonly [K in RolloutKind]: readonly { apiVersion: string; kind: string }[] } = {
  AGENT_POOL: [{ apiVersion: 'network.harvesterhci.io/v1alpha1', kind: 'IPPool' }],
  VIRTUAL_CLUSTER: [
    { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster' },
    { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'ClusterVersion' },
  ],
  NODE_AGENT: [{ apiVersion: 'apps/v1', kind: 'DaemonSet' }],
};

/** client-node's discovery read (`resource`, protected) made callable; `kc.makeApiClient` builds it with the budget. */
class DiscoveryApi extends KubernetesObjectApi {
  served(apiVersion: string, kind: string) {
    return this.resource(apiVersion, kind);
  }
}

/**
 * The kinds `kubeConfig`'s cluster serves, in KIND_RESOURCES order. One discovery read per group version (a fresh
 * client each time: client-node caches a group version's resources forever, and a CRD may come or go). A group version
 * that is not served (404) means its kinds are absent; any other failure is thrown, for the caller's health state.
 */
export async function discoverKinds(kubeConfig: KubeConfig): Promise<RolloutKind[]> {
  const api = kubeConfig.makeApiClient(DiscoveryApi);
  const served = new Map<string, Promise<boolean>>();
  const has = (apiVersion: string, kind: string) => {
    const key = `${apiVersion}/${kind}`;
    let answer = served.get(key);
    if (!answer) {
      answer = api.served(apiVersion, kind).then(
        (resource) => resource !== undefined,
        (error: unknown) => {
          if (error instanceof ApiException && error.code === 404) return false;
          throw error;
        },
      );
      served.set(key, answer);
    }
    return answer;
  };
  const kinds: RolloutKind[] = [];
  for (const [kind, resources] of Object.entries(KIND_RESOURCES) as [RolloutKind, (typeof KIND_RESOURCES)[RolloutKind]][]) {
    // In order, not at once: the first group version read is cached for the kinds after it.
    let all = true;
    for (const r of resources) all &&= await has(r.apiVersion, r.kind);
    if (all) kinds.push(kind);
  }
  return kinds;
}
