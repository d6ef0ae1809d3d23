import { Resources } from '../store/resources.js';
import { notFound, SimApiError } from '../store/errors.js';
import { isResource, type AdmissionPlugin } from './types.js';
import { forbidden } from './forbidden.js';

/** apiserver's immortal namespaces (NamespaceLifecycle's default set). */
const IMMORTAL = new Set(['default', 'kube-system', 'kube-public']);

/**
 * The NamespaceLifecycle plugin: no new content in a missing namespace (404) or in one being terminated (403, with the
 * `NamespaceTerminating` cause), and the immortal namespaces cannot be deleted. Updates and deletes of existing content
 * stay allowed in a terminating namespace, as upstream (the namespace controller needs them to empty it).
 */
export const namespaceLifecycle: AdmissionPlugin = {
  admit({ operation, type, object }, store) {
    if (isResource(type, Resources.namespaces)) {
      if (operation === 'DELETE' && IMMORTAL.has(object.metadata.name)) {
        throw forbidden(type, object.metadata.name, 'this namespace may not be deleted');
      }
      return;
    }
    if (!type.namespaced || operation !== 'CREATE') return;
    const name = object.metadata.namespace ?? '';
    const namespace = store.get(Resources.namespaces, undefined, name);
    if (!namespace) throw notFound('namespaces', name);
    if (namespace.status?.phase === 'Terminating' || namespace.metadata.deletionTimestamp) {
      const error = forbidden(
        type,
        object.metadata.name || object.metadata.generateName || '',
        `unable to create new content in namespace ${name} because it is being terminated`,
      );
      return throwWithCause(error, { type: 'NamespaceTerminating', message: `namespace ${name} is being terminated`, field: 'metadata.namespace' });
    }
  },
};

function throwWithCause(error: SimApiError, cause: { type: string; message: string; field: string }): never {
  throw new SimApiError(error.code, error.reason, error.message, { ...error.details, causes: [...(error.details?.causes ?? []), cause] });
}
