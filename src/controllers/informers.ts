import type { KubernetesListObject, KubernetesObject, V1DaemonSet, V1Deployment, V1Node, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Informer, InformerOptions } from '../controller/Informer.js';
import type { ControllerHost } from './host.js';

type Indexers<T extends KubernetesObject> = InformerOptions<T>['indexers'];

/** Which objects of a collection: one namespace (all when absent), and the API server's selectors. */
export interface CollectionScope {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/** A custom resource collection, cluster-wide. */
export interface CustomResource {
  group: string;
  version: string;
  plural: string;
}

/**
 * The one way the rollout kinds build informers: each collection by its API path and selectors, so that two kinds asking
 * for the same collection share one list and watch and one cache (the host dedupes by path and selectors; a second
 * caller's indexers are added to the shared cache). `name` labels the informer's metrics; the first caller's wins.
 */
export interface ClusterInformers {
  pods(indexers?: Indexers<V1Pod>): Informer<V1Pod>;
  nodes(): Informer<V1Node>;
  daemonSets(): Informer<V1DaemonSet>;
  statefulSets(): Informer<V1StatefulSet>;
  deployments(name: string, scope?: CollectionScope): Informer<V1Deployment>;
  custom<T extends KubernetesObject>(resource: CustomResource, indexers?: Indexers<T>): Informer<T>;
}

export function clusterInformers(host: Pick<ControllerHost, 'informer' | 'clients'>): ClusterInformers {
  const { core, apps, custom } = host.clients;
  return {
    pods: (indexers) =>
      host.informer<V1Pod>({ name: 'pods', path: '/api/v1/pods', list: (page) => core.listPodForAllNamespaces(page), ...(indexers ? { indexers } : {}) }),
    nodes: () => host.informer<V1Node>({ name: 'nodes', path: '/api/v1/nodes', list: (page) => core.listNode(page) }),
    daemonSets: () =>
      host.informer<V1DaemonSet>({ name: 'daemonsets', path: '/apis/apps/v1/daemonsets', list: (page) => apps.listDaemonSetForAllNamespaces(page) }),
    statefulSets: () =>
      host.informer<V1StatefulSet>({ name: 'statefulsets', path: '/apis/apps/v1/statefulsets', list: (page) => apps.listStatefulSetForAllNamespaces(page) }),
    deployments: (name, scope = {}) => {
      const { namespace, ...selectors } = scope;
      return host.informer<V1Deployment>({
        name,
        path: namespace ? `/apis/apps/v1/namespaces/${namespace}/deployments` : '/apis/apps/v1/deployments',
        ...selectors,
        list: (page) =>
          namespace ? apps.listNamespacedDeployment({ namespace, ...selectors, ...page }) : apps.listDeploymentForAllNamespaces({ ...selectors, ...page }),
      });
    },
    custom: <T extends KubernetesObject>(resource: CustomResource, indexers?: Indexers<T>) =>
      host.informer<T>({
        name: resource.plural,
        path: `/apis/${resource.group}/${resource.version}/${resource.plural}`,
        list: async (page) => (await custom.listClusterCustomObject({ ...resource, ...page })) as KubernetesListObject<T>,
        ...(indexers ? { indexers } : {}),
      }),
  };
}
