import { Resources } from '../store/resources.js';
import { isResource, type AdmissionPlugin } from './types.js';
import { forbidden } from './forbidden.js';

export const DEFAULT_SERVICE_ACCOUNT = 'default';

/**
 * The ServiceAccount plugin on pod creation (plugin/pkg/admission/serviceaccount): a pod without a ServiceAccount gets
 * `default`, the ServiceAccount must exist in the pod's namespace (403 otherwise, with upstream's message), and a pod
 * without imagePullSecrets takes its ServiceAccount's. Not modelled: the projected token volume the plugin mounts
 * (`kube-api-access-*`) and the mirror-pod rules. Pod updates and subresources are not this plugin's business.
 */
export const serviceAccountAdmission: AdmissionPlugin = {
  admit({ operation, type, object, subresource }, store) {
    if (!isResource(type, Resources.pods) || operation !== 'CREATE' || subresource !== undefined) return;
    object.spec ??= {};
    const spec = object.spec;
    // `serviceAccount` is the deprecated alias: the v1 conversion fills one from the other.
    if (!spec.serviceAccountName) spec.serviceAccountName = spec.serviceAccount || DEFAULT_SERVICE_ACCOUNT;
    spec.serviceAccount = spec.serviceAccountName;
    const namespace = object.metadata.namespace ?? '';
    const name = String(spec.serviceAccountName);
    const account = store.get(Resources.serviceaccounts, namespace, name);
    if (!account) {
      throw forbidden(
        type,
        object.metadata.name || object.metadata.generateName || '',
        `error looking up service account ${namespace}/${name}: serviceaccount "${name}" not found`,
      );
    }
    const pullSecrets = (account as { imagePullSecrets?: { name?: string }[] }).imagePullSecrets;
    if ((!Array.isArray(spec.imagePullSecrets) || spec.imagePullSecrets.length === 0) && Array.isArray(pullSecrets) && pullSecrets.length > 0) {
      spec.imagePullSecrets = pullSecrets.map((s) => ({ name: s.name }));
    }
  },
};
