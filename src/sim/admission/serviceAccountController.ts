import { Resources } from '../store/resources.js';
import { SimApiError } from '../store/errors.js';
import type { KubeObject, ObjectStore } from '../types.js';
import { DEFAULT_SERVICE_ACCOUNT } from './serviceAccount.js';

/**
 * The ServiceAccount controller's one job the simulator needs: every namespace has a `default` ServiceAccount, made when
 * the namespace appears. Synchronous (inside the namespace's create), where the real
 * controller is a moment late: the real admission plugin retries the `default` lookup for about a second to hide that,
 * so clients see the same thing. A deleted `default` is not made again (the real controller would). Returns the
 * unsubscribe function.
 */
export function startServiceAccountController(store: ObjectStore): () => void {
  const ensure = (namespace: string) => {
    const ns = store.get(Resources.namespaces, undefined, namespace);
    if (!ns || ns.metadata.deletionTimestamp) return;
    if (store.get(Resources.serviceaccounts, namespace, DEFAULT_SERVICE_ACCOUNT)) return;
    const account: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } };
    try {
      store.create(Resources.serviceaccounts, account);
    } catch (error) {
      if (!(error instanceof SimApiError && error.code === 409)) throw error;
    }
  };
  return store.subscribe((event) => {
    if (event.resource === Resources.namespaces && event.type === 'ADDED') ensure(event.object.metadata.name);
  });
}
