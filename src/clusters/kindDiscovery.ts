import { ApiException, type KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { RolloutKind } from '../domain/events.js';
import type { ServedResource } from '../domain/kinds/index.js';

/**
 * Which rollout kinds a member cluster has, from its discovery documents (`/apis/<group>/<version>`: every
 * authenticated user may read them, unlike the CustomResourceDefinitions): a kind is there when every resource its
 * controllers watch is served. Each kind declares those resources in its contract (`servedResources`); the start gives
 * them here in the registered kinds' order.
 */
export type KindResources = readonly { readonly kind: RolloutKind; readonly resources: readonly ServedResource[] }[];

/** client-node's discovery read (`resource`, protected) made callable; `kc.makeApiClient` builds it with the budget. */
class DiscoveryApi extends KubernetesObjectApi {
  served(apiVersion: string, kind: string) {
    return this.resource(apiVersion, kind);
  }
}

/**
 * The kinds `kubeConfig`'s cluster serves, in `kinds`' order. One discovery read per group version (a fresh
 * client each time: client-node caches a group version's resources forever, and a CRD may come or go). A group version
 * that is not served (404) means its kinds are absent; any other failure is thrown, for the caller's health state.
 */
export async function discoverKinds(kubeConfig: KubeConfig, kinds: KindResources): Promise<RolloutKind[]> {
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
  const found: RolloutKind[] = [];
  for (const { kind, resources } of kinds) {
    // In order, not at once: the first group version read is cached for the kinds after it.
    let all = true;
    for (const r of resources) all &&= await has(r.apiVersion, r.kind);
    if (all) found.push(kind);
  }
  return found;
}
