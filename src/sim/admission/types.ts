import type { KubeObject, ObjectStore, ResourceType } from '../types.js';
import type { FieldError } from './fieldErrors.js';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/** One write as admission sees it (the fields of apiserver's `admission.Attributes` the simulator needs). */
export interface AdmissionRequest {
  operation: AdmissionOperation;
  type: ResourceType;
  /** CREATE/UPDATE: the object about to be stored (mutating steps change it in place); DELETE: the stored object. */
  object: KubeObject;
  /** UPDATE: the stored version being replaced. */
  old?: KubeObject;
  /** `status`, `binding` (the scheduler's in-process bind), or undefined for the main resource. */
  subresource?: string;
}

/** What admission may read: the store itself, synchronously (the real plugins read informer caches). */
export type AdmissionReader = Pick<ObjectStore, 'get'>;

/**
 * An admission plugin: throws a SimApiError to refuse the write (403 Forbidden, 404 NotFound, ...), may mutate
 * `request.object`. Runs before validation, as kube-apiserver's admission chain runs before the strategy's Validate.
 */
export interface AdmissionPlugin {
  admit(request: AdmissionRequest, store: AdmissionReader): void;
}

/** A type's validation (the registry strategy's Validate/ValidateUpdate): returns the field errors, all of them. */
export type Validator = (request: AdmissionRequest) => FieldError[];

/** Same resource (group and plural), whether or not it is the registry's own object. */
export function isResource(type: ResourceType, wanted: ResourceType): boolean {
  return type === wanted || (type.group === wanted.group && type.plural === wanted.plural);
}
