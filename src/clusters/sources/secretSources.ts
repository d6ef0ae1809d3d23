import { ApiException, type CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { translateKubeError } from '../../kube/errors.js';
import type { ClusterSourceReader, FoundCluster } from './types.js';

/** The label that makes a Secret in rollplane's namespace a member cluster's (docs/adr/0048-member-clusters.md). */
export const MEMBER_CLUSTER_LABEL = 'rollplane.io/member-cluster';
/** The prefix of the labels rollplane gives member clusters; a Secret's own labels under it are not taken. */
export const RESERVED_LABEL_PREFIX = 'rollplane.io/';
/** Marks the Secrets `registerCluster` writes (sources/apiCredentials.ts); this source leaves them to the API source. */
export const API_REGISTERED_BY_LABEL = 'rollplane.io/registered-by';
/** The member cluster's name when it is not the Secret's name. */
export const CLUSTER_NAME_ANNOTATION = 'rollplane.io/cluster-name';
/** The key of the kubeconfig in a member cluster Secret. */
export const KUBECONFIG_KEY = 'kubeconfig';

/** Cluster API's kubeconfig Secrets: `<cluster>-kubeconfig`, labelled with the cluster's name, the kubeconfig in `value`. */
export const CAPI_CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';
export const CAPI_KUBECONFIG_KEY = 'value';
/** The label a CAPI-registered member cluster gets: the namespace of its Cluster object. */
export const CAPI_NAMESPACE_LABEL = 'rollplane.io/capi-namespace';

function decoded(secret: V1Secret, key: string): string | undefined {
  const data = secret.data?.[key];
  return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
}

const refOf = (secret: V1Secret) => `${secret.metadata?.namespace}/${secret.metadata?.name}`;

/** Lists Secrets; a namespace that does not exist has none. Failures become AppErrors (translateKubeError). */
export async function listSecrets(core: CoreV1Api, namespace: string | undefined, labelSelector: string): Promise<V1Secret[]> {
  try {
    const list =
      namespace === undefined ? await core.listSecretForAllNamespaces({ labelSelector }) : await core.listNamespacedSecret({ namespace, labelSelector });
    return list.items;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return [];
    // Only the status and reason: an ApiException's body is the server's Status, but keep the cause out of logs.
    const translated = translateKubeError(error, `listing Secrets (${labelSelector}) in ${namespace ?? 'every namespace'}`);
    throw Object.assign(translated, { cause: undefined });
  }
}

/**
 * Secrets in rollplane's namespace labelled `rollplane.io/member-cluster=true`, each holding a kubeconfig under
 * `kubeconfig`. The cluster's name is the `rollplane.io/cluster-name` annotation, else the Secret's name; its labels
 * are the Secret's labels but those under `rollplane.io/` (the marker among them; as Argo CD's cluster Secrets). A Secret without the key is skipped with a
 * reason the caller logs.
 */
export function memberClusterSecrets(core: CoreV1Api, namespace: string): ClusterSourceReader {
  return {
    source: 'SECRET',
    async read() {
      const found: FoundCluster[] = [];
      for (const secret of await listSecrets(core, namespace, `${MEMBER_CLUSTER_LABEL}=true`)) {
        // The API's own Secrets are the API source's (docs/adr/0056-clusters-api.md).
        if (secret.metadata?.labels?.[API_REGISTERED_BY_LABEL] !== undefined) continue;
        // Labels under rollplane.io/ are rollplane's to set (the marker, the CAPI namespace): a Secret's own are dropped,
        // so that no Secret can pass for a Cluster API registration (attack 13, F10).
        const labels = Object.fromEntries(Object.entries(secret.metadata?.labels ?? {}).filter(([key]) => !key.startsWith(RESERVED_LABEL_PREFIX)));
        found.push({
          registration: {
            name: secret.metadata?.annotations?.[CLUSTER_NAME_ANNOTATION] ?? secret.metadata?.name ?? '',
            labels,
            source: 'SECRET',
            sourceRef: refOf(secret),
          },
          kubeconfig: decoded(secret, KUBECONFIG_KEY) ?? '',
        });
      }
      return found;
    },
  };
}

/**
 * Cluster API's `<cluster>-kubeconfig` Secrets (key `value`, label `cluster.x-k8s.io/cluster-name`) in `namespaces`
 * (undefined: every namespace), so that a management cluster's workload clusters register themselves. The member is
 * named after the CAPI cluster and labelled with its namespace; the same cluster name in two namespaces: the first
 * namespace in order keeps the name, the other is refused (and said so).
 */
export function capiKubeconfigSecrets(core: CoreV1Api, namespaces: readonly string[] | undefined): ClusterSourceReader {
  return {
    source: 'CAPI',
    async read() {
      const lists =
        namespaces === undefined
          ? [await listSecrets(core, undefined, CAPI_CLUSTER_NAME_LABEL)]
          : await Promise.all(namespaces.map((ns) => listSecrets(core, ns, CAPI_CLUSTER_NAME_LABEL)));
      return lists
        .flat()
        .filter((secret) => {
          const cluster = secret.metadata?.labels?.[CAPI_CLUSTER_NAME_LABEL];
          return cluster !== undefined && secret.metadata?.name === `${cluster}-kubeconfig`;
        })
        .sort((a, b) => refOf(a).localeCompare(refOf(b)))
        .map((secret) => ({
          registration: {
            name: secret.metadata!.labels![CAPI_CLUSTER_NAME_LABEL]!,
            labels: { [CAPI_NAMESPACE_LABEL]: secret.metadata?.namespace ?? '' },
            source: 'CAPI' as const,
            sourceRef: refOf(secret),
          },
          kubeconfig: decoded(secret, CAPI_KUBECONFIG_KEY) ?? '',
        }));
    },
  };
}
