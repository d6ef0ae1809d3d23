import { Resources } from '../store/resources.js';
import { deepEqual, isPlainObject } from '../store/objects.js';
import type { KubeObject, ResourceType } from '../types.js';
import { invalidField, requiredField, tooLongField, type FieldError } from './fieldErrors.js';
import { isDns1035Label, isDns1123Label, isDns1123Subdomain, isLabelKey, isLabelValue, isValidPathSegmentName } from '../../util/dnsNames.js';
import { isResource, type Validator } from './types.js';

/** apimachinery's TotalAnnotationSizeLimitB: keys and values together. */
export const ANNOTATIONS_MAX_BYTES = 256 * 1024;

/**
 * The name rule of each kind, as its registry strategy validates it: namespaces are DNS-1123 labels, services DNS-1035
 * labels (they become DNS names and environment variables), RBAC objects path segments, everything else here a
 * DNS-1123 subdomain (pods, secrets, service accounts, workloads, custom resources).
 */
function nameRule(type: ResourceType): (name: string) => string[] {
  if (isResource(type, Resources.namespaces)) return isDns1123Label;
  if (isResource(type, Resources.services)) return isDns1035Label;
  if (type.group === 'rbac.authorization.k8s.io') return isValidPathSegmentName;
  return isDns1123Subdomain;
}

/** `generateName` is validated as a prefix: a trailing dash is allowed (apimachinery's maskTrailingDash). */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? `${name.slice(0, -1)}a` : name;
}

/**
 * ValidateObjectMeta on create and ValidateObjectMetaUpdate on update: name (create only: it is immutable),
 * generateName, labels, annotations (format and 256 KiB in total), ownerReferences and finalizers. Status writes keep
 * the stored metadata and are not checked here.
 */
export const validateObjectMeta: Validator = ({ operation, type, object, old, subresource }) => {
  if (subresource === 'status') return [];
  const meta = object.metadata;
  const errs: FieldError[] = [];
  if (operation === 'CREATE') {
    const rule = nameRule(type);
    if (meta.generateName) {
      for (const msg of rule(maskTrailingDash(meta.generateName))) errs.push(invalidField('metadata.generateName', meta.generateName, msg));
    }
    if (!meta.name) errs.push(requiredField('metadata.name', 'name or generateName is required'));
    else for (const msg of rule(meta.name)) errs.push(invalidField('metadata.name', meta.name, msg));
  }
  // What the stored version already had passed these checks: unchanged labels and annotations need no second look.
  if (!old || !deepEqual(meta.labels, old.metadata.labels)) errs.push(...validateLabels(meta.labels, 'metadata.labels'));
  if (!old || !deepEqual(meta.annotations, old.metadata.annotations)) errs.push(...validateAnnotations(meta.annotations));
  errs.push(...validateOwnerReferences(object));
  for (const finalizer of meta.finalizers ?? []) {
    for (const msg of isLabelKey(String(finalizer))) errs.push(invalidField('metadata.finalizers', finalizer, msg));
  }
  return errs;
};

/** Label keys and values (also used for selectors); errors name the map, not the key, as upstream. */
export function validateLabels(labels: unknown, field: string): FieldError[] {
  if (!isPlainObject(labels)) return [];
  const errs: FieldError[] = [];
  for (const [key, value] of Object.entries(labels)) {
    for (const msg of isLabelKey(key)) errs.push(invalidField(field, key, msg));
    for (const msg of isLabelValue(String(value ?? ''))) errs.push(invalidField(field, value, msg));
  }
  return errs;
}

function validateAnnotations(annotations: unknown): FieldError[] {
  if (!isPlainObject(annotations)) return [];
  const errs: FieldError[] = [];
  let size = 0;
  for (const [key, value] of Object.entries(annotations)) {
    // Annotation keys follow the label-key rule except that case does not matter.
    for (const msg of isLabelKey(key.toLowerCase())) errs.push(invalidField('metadata.annotations', key, msg));
    size += Buffer.byteLength(key) + Buffer.byteLength(String(value ?? ''));
  }
  if (size > ANNOTATIONS_MAX_BYTES) errs.push(tooLongField('metadata.annotations', ANNOTATIONS_MAX_BYTES));
  return errs;
}

function validateOwnerReferences(object: KubeObject): FieldError[] {
  const refs = object.metadata.ownerReferences;
  if (!Array.isArray(refs)) return [];
  const errs: FieldError[] = [];
  const field = 'metadata.ownerReferences';
  let controller = '';
  for (const ref of refs) {
    const apiVersion = String(ref.apiVersion ?? '');
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (!version) errs.push(invalidField(`${field}.apiVersion`, apiVersion, 'version must not be empty'));
    if (!ref.kind) errs.push(invalidField(`${field}.kind`, ref.kind ?? '', 'must not be empty'));
    if (!ref.name) errs.push(invalidField(`${field}.name`, ref.name ?? '', 'must not be empty'));
    if (!ref.uid) errs.push(invalidField(`${field}.uid`, ref.uid ?? '', 'must not be empty'));
    if (apiVersion === 'v1' && ref.kind === 'Event') errs.push(invalidField(field, ref, '/v1, Kind=Event is disallowed from being an owner'));
    if (ref.controller === true) {
      const current = `${ref.kind}/${ref.name}`;
      if (controller) {
        errs.push(invalidField(field, refs, `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${current}`));
      } else {
        controller = current;
      }
    }
  }
  return errs;
}

/** Used by kinds whose fields may never change after creation. */
export function immutableField(field: string, next: unknown, previous: unknown, equal: (a: unknown, b: unknown) => boolean): FieldError[] {
  return equal(next, previous) ? [] : [invalidField(field, next, 'field is immutable')];
}
