import { ApiException, type CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { isMap, type YAMLMap } from 'yaml';
import type { ApiClusterEntry, ApiCredentialStore } from '../../domain/clusters/MemberClusterAdmin.js';
import { ConflictError } from '../../errors.js';
import { translateKubeError } from '../../kube/errors.js';
import { API_MARK, credentialsFile, readCredentialsDocument, replaceCredentialsFile, yamlNode } from './credentialsFile.js';
import { API_REGISTERED_BY_LABEL as REGISTERED_BY_LABEL, CLUSTER_NAME_ANNOTATION, KUBECONFIG_KEY, listSecrets, MEMBER_CLUSTER_LABEL } from './secretSources.js';
import type { ClusterSourceReader } from './types.js';

/**
 * Where the clusters registered through the API keep their credentials (docs/adr/0056-clusters-api.md), and the API
 * source that reads them back: the write goes to the store, and the next sync pass registers what the source reads,
 * the one path every source takes into the registry. Nothing is lost on a restart: the store is the truth.
 */
export interface ApiCredentials {
  store: ApiCredentialStore;
  reader: ClusterSourceReader;
}

/** The label that marks a member cluster Secret as the API's (the Secret source skips it; the API source reads it). */
export { API_REGISTERED_BY_LABEL as REGISTERED_BY_LABEL } from './secretSources.js';
export const REGISTERED_BY_API = 'api';
/** A Secret the API wrote keeps the cluster's labels here (JSON): they are the cluster's, not the Secret's. */
export const CLUSTER_LABELS_ANNOTATION = 'rollplane.io/cluster-labels';

/** The Secret of an API-registered cluster: one per cluster, named after it. */
export const apiSecretName = (cluster: string) => `rollplane-cluster-${cluster}`;

/** In the embedded mode: entries of the 0600 credentials file, marked `managedBy: rollplane-api`. */
export function apiCredentialsInFile(file: string): ApiCredentials {
  const entriesOf = (clusters: { items: unknown[] }) =>
    clusters.items.filter((item): item is YAMLMap => isMap(item) && item.get(API_MARK.key) === API_MARK.value);
  const edit = async (name: string, change: (entry: YAMLMap, items: unknown[]) => void): Promise<boolean> => {
    const { document, clusters } = await readCredentialsDocument(file);
    const entry = entriesOf(clusters).find((item) => item.get('name') === name);
    if (!entry) return false;
    change(entry, clusters.items);
    await replaceCredentialsFile(file, document);
    return true;
  };
  return {
    reader: credentialsFile(file, 'API'),
    store: {
      description: `the credentials file ${file}`,
      async add({ name, labels, kubeconfig }: ApiClusterEntry) {
        const { document, clusters } = await readCredentialsDocument(file);
        if (clusters.items.some((item) => isMap(item) && item.get('name') === name)) {
          throw new ConflictError(`the credentials file ${file} has an entry named "${name}" already`);
        }
        clusters.add(yamlNode({ name, labels: { ...labels }, [API_MARK.key]: API_MARK.value, kubeconfig }));
        await replaceCredentialsFile(file, document);
      },
      relabel: (name, labels) => edit(name, (entry) => entry.set('labels', { ...labels })),
      remove: (name) => edit(name, (entry, items) => items.splice(items.indexOf(entry), 1)),
    },
  };
}

/**
 * In a cluster: a Secret per cluster in rollplane's namespace, labelled `rollplane.io/member-cluster=true` (so that
 * `kubectl get secrets -l rollplane.io/member-cluster=true` lists every member's) and `rollplane.io/registered-by=api`,
 * the kubeconfig under `kubeconfig`, the cluster's name and labels in annotations.
 */
export function apiCredentialsInSecrets(core: CoreV1Api, namespace: string): ApiCredentials {
  const selector = `${MEMBER_CLUSTER_LABEL}=true,${REGISTERED_BY_LABEL}=${REGISTERED_BY_API}`;
  const failed = (error: unknown, doing: string): never => {
    const translated = translateKubeError(error, doing);
    throw Object.assign(translated, { cause: undefined });
  };
  const read = async (cluster: string): Promise<V1Secret | undefined> => {
    try {
      const secret = await core.readNamespacedSecret({ name: apiSecretName(cluster), namespace });
      return secret.metadata?.labels?.[REGISTERED_BY_LABEL] === REGISTERED_BY_API ? secret : undefined;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      return failed(error, `reading Secret ${namespace}/${apiSecretName(cluster)}`);
    }
  };
  return {
    reader: {
      source: 'API',
      async read() {
        return (await listSecrets(core, namespace, selector)).map((secret) => ({
          registration: {
            name: secret.metadata?.annotations?.[CLUSTER_NAME_ANNOTATION] ?? '',
            labels: labelsOf(secret),
            source: 'API' as const,
            sourceRef: `${secret.metadata?.namespace}/${secret.metadata?.name}`,
          },
          kubeconfig: Buffer.from(secret.data?.[KUBECONFIG_KEY] ?? '', 'base64').toString('utf8'),
        }));
      },
    },
    store: {
      description: `Secrets in ${namespace}`,
      async add({ name, labels, kubeconfig }) {
        try {
          await core.createNamespacedSecret({
            namespace,
            body: {
              metadata: {
                name: apiSecretName(name),
                namespace,
                labels: { [MEMBER_CLUSTER_LABEL]: 'true', [REGISTERED_BY_LABEL]: REGISTERED_BY_API },
                annotations: { [CLUSTER_NAME_ANNOTATION]: name, [CLUSTER_LABELS_ANNOTATION]: JSON.stringify(labels) },
              },
              type: 'Opaque',
              data: { [KUBECONFIG_KEY]: Buffer.from(kubeconfig, 'utf8').toString('base64') },
            },
          });
        } catch (error) {
          if (error instanceof ApiException && error.code === 409) throw new ConflictError(`Secret ${namespace}/${apiSecretName(name)} exists already`);
          failed(error, `creating Secret ${namespace}/${apiSecretName(name)}`);
        }
      },
      async relabel(name, labels) {
        const secret = await read(name);
        if (!secret) return false;
        secret.metadata!.annotations = { ...secret.metadata?.annotations, [CLUSTER_LABELS_ANNOTATION]: JSON.stringify(labels) };
        try {
          // With its resourceVersion: a Secret changed meanwhile is a conflict, not overwritten.
          await core.replaceNamespacedSecret({ name: apiSecretName(name), namespace, body: secret });
        } catch (error) {
          if (error instanceof ApiException && error.code === 409)
            throw new ConflictError(`Secret ${namespace}/${apiSecretName(name)} changed meanwhile; try again`);
          failed(error, `updating Secret ${namespace}/${apiSecretName(name)}`);
        }
        return true;
      },
      async remove(name) {
        if (!(await read(name))) return false;
        try {
          await core.deleteNamespacedSecret({ name: apiSecretName(name), namespace });
        } catch (error) {
          if (error instanceof ApiException && error.code === 404) return false;
          failed(error, `deleting Secret ${namespace}/${apiSecretName(name)}`);
        }
        return true;
      },
    },
  };
}

/** The cluster's labels from the annotation; an unreadable one gives none (the registry checks what it gets). */
function labelsOf(secret: V1Secret): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(secret.metadata?.annotations?.[CLUSTER_LABELS_ANNOTATION] ?? '{}');
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
  } catch {
    return {};
  }
}
