/**
 * The admission and validation kube-apiserver always runs, for the simulator: every create, update and patch (and
 * namespace deletes) goes through `Admission.admit` from the store itself, so writes over HTTP and writes the
 * simulated controllers make in-process meet the same rules, dry runs included. Order as upstream: admission plugins
 * (namespace lifecycle, ServiceAccount, the scheduler's binding, Secret decoding), then the kind's validation, whose
 * field errors come back together in one 422.
 * See docs/adr/0014-built-in-admission.md for what is modelled and what is not.
 */
import { invalid } from '../store/errors.js';
import { namespaceLifecycle } from './namespaceLifecycle.js';
import { validateObjectMeta } from './objectMeta.js';
import { podBinding, validatePodUpdate } from './podUpdate.js';
import { secretDecoding, validateConfigMap, validateSecret } from './secrets.js';
import { serviceAccountAdmission } from './serviceAccount.js';
import type { AdmissionPlugin, AdmissionReader, AdmissionRequest, Validator } from './types.js';

export type { AdmissionOperation, AdmissionPlugin, AdmissionReader, AdmissionRequest, Validator } from './types.js';
export { startServiceAccountController } from './serviceAccountController.js';

const PLUGINS: readonly AdmissionPlugin[] = [namespaceLifecycle, serviceAccountAdmission, podBinding, secretDecoding];
const VALIDATORS: readonly Validator[] = [validateObjectMeta, validatePodUpdate, validateSecret, validateConfigMap];

export class Admission {
  constructor(
    private readonly store: AdmissionReader,
    private readonly plugins: readonly AdmissionPlugin[] = PLUGINS,
    private readonly validators: readonly Validator[] = VALIDATORS,
  ) {}

  /** Mutates `request.object` as the admission plugins do, or throws the SimApiError the real server would answer. */
  admit(request: AdmissionRequest): void {
    for (const plugin of this.plugins) plugin.admit(request, this.store);
    if (request.operation === 'DELETE') return;
    const errs = this.validators.flatMap((validate) => validate(request));
    if (errs.length > 0) throw invalid(request.type.kind, request.object.metadata.name ?? '', errs, request.type.group);
  }
}
