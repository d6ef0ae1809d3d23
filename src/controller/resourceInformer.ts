import type { KubernetesObject, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import { Informer, type InformerOptions } from './Informer.js';

export interface ResourceInformerOptions<T extends KubernetesObject> extends Omit<InformerOptions<T>, 'path' | 'list' | 'watch' | 'name'> {
  /** e.g. 'v1', 'apps/v1', 'network.harvesterhci.io/v1alpha1'. */
  apiVersion: string;
  kind: string;
  /** The resource's plural, e.g. 'pods', 'ippools'. */
  plural: string;
  /** Only this namespace; all namespaces when omitted. */
  namespace?: string;
  name?: string;
}

/**
 * An Informer for any resource, built-in or custom, by apiVersion/kind/plural: lists through KubernetesObjectApi
 * (which finds the resource path by discovery once per apiVersion) and watches the matching collection path.
 */
export function resourceInformer<T extends KubernetesObject>(
  kube: { objects: KubernetesObjectApi; watch: Watch },
  options: ResourceInformerOptions<T>,
): Informer<T> {
  const { apiVersion, kind, plural, namespace, ...rest } = options;
  const root = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const path = `${root}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${plural}`;
  return new Informer<T>({
    ...rest,
    name: options.name ?? `${plural}${namespace ? `/${namespace}` : ''}`,
    path,
    watch: kube.watch,
    list: (page) =>
      kube.objects.list<T>(
        apiVersion,
        kind,
        namespace,
        undefined,
        undefined,
        undefined,
        options.fieldSelector,
        options.labelSelector,
        page.limit,
        page._continue,
      ),
  });
}
