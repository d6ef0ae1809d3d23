import { conflict } from '../store/errors.js';
import { isPlainObject } from '../store/objects.js';
import { Resources } from '../store/resources.js';
import { forbiddenField, invalidField, requiredField, type FieldError } from './fieldErrors.js';
import { isResource, type AdmissionPlugin, type Validator } from './types.js';

/** updatablePodSpecFields of pkg/apis/core/validation, in its order and wording. */
export const UPDATABLE_POD_SPEC_FIELDS = [
  '`spec.containers[*].image`',
  '`spec.initContainers[*].image`',
  '`spec.activeDeadlineSeconds`',
  '`spec.tolerations` (only additions to existing tolerations)',
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
];

const MAX_INT32 = 2_147_483_647;

/**
 * The scheduler's bind (pods/binding), which the simulated scheduler does in-process: it may set `spec.nodeName` once,
 * and a pod already bound answers 409 as upstream's BindingREST does.
 */
export const podBinding: AdmissionPlugin = {
  admit({ type, object, old, subresource }) {
    if (!isResource(type, Resources.pods) || subresource !== 'binding' || !old) return;
    const bound = old.spec?.nodeName;
    if (bound) {
      throw conflict('pods/binding', old.metadata.name, `pod ${old.metadata.name} is already assigned to node "${bound}"`);
    }
    // Only the node changes through a binding, whatever else the caller sent.
    object.spec = { ...old.spec, nodeName: object.spec?.nodeName };
  },
};

/**
 * ValidatePodUpdate: a pod's spec is fixed once created except container and init-container images, a decreasing
 * (or newly set) activeDeadlineSeconds, added tolerations (tolerationSeconds of existing ones may change), removed
 * scheduling gates, and terminationGracePeriodSeconds from a negative value to 1. Anything else is 422 with upstream's
 * message; the diff after it is the simulator's own rendering (upstream prints a go-cmp diff).
 */
export const validatePodUpdate: Validator = ({ operation, type, object, old, subresource }) => {
  if (!isResource(type, Resources.pods) || operation !== 'UPDATE' || subresource !== undefined || !old) return [];
  const next = spec(object.spec);
  const prev = spec(old.spec);
  // Most updates (labels, annotations, finalizers) leave the spec alone: nothing to check then, as upstream.
  if (same(next, prev)) return [];
  const errs: FieldError[] = [];

  for (const list of ['containers', 'initContainers'] as const) {
    const now = array(next[list]);
    const before = array(prev[list]);
    if (now.length !== before.length) {
      errs.push(forbiddenField(`spec.${list}`, 'pod updates may not add or remove containers'));
      return errs;
    }
    now.forEach((container, i) => {
      const image = isPlainObject(container) ? container.image : undefined;
      if (typeof image !== 'string' || image.length === 0) errs.push(requiredField(`spec.${list}[${i}].image`));
      else if (image.trim() !== image) errs.push(invalidField(`spec.${list}[${i}].image`, image, 'must not have leading or trailing whitespace'));
    });
  }

  const deadline = next.activeDeadlineSeconds;
  if (deadline !== undefined && deadline !== null) {
    if (typeof deadline !== 'number' || deadline < 0 || deadline > MAX_INT32) {
      errs.push(invalidField('spec.activeDeadlineSeconds', deadline, `must be between 0 and ${MAX_INT32}, inclusive`));
      return errs;
    }
    if (typeof prev.activeDeadlineSeconds === 'number' && prev.activeDeadlineSeconds < deadline) {
      errs.push(invalidField('spec.activeDeadlineSeconds', deadline, 'must be less than or equal to previous value'));
      return errs;
    }
  } else if (prev.activeDeadlineSeconds !== undefined && prev.activeDeadlineSeconds !== null) {
    errs.push(invalidField('spec.activeDeadlineSeconds', null, 'must not update from a positive integer to nil value'));
  }

  errs.push(...onlyAddedTolerations(array(next.tolerations), array(prev.tolerations)));
  errs.push(...onlyDeletedSchedulingGates(array(next.schedulingGates), array(prev.schedulingGates)));

  const munged: Record<string, unknown> = { ...next };
  for (const list of ['containers', 'initContainers'] as const) {
    if (Array.isArray(next[list])) {
      munged[list] = array(next[list]).map((c, i) =>
        isPlainObject(c) ? { ...c, image: (array(prev[list])[i] as Record<string, unknown> | undefined)?.image } : c,
      );
    }
  }
  for (const field of ['activeDeadlineSeconds', 'schedulingGates', 'tolerations']) {
    if (prev[field] === undefined) delete munged[field];
    else munged[field] = prev[field];
  }
  const oldGrace = prev.terminationGracePeriodSeconds;
  if (typeof oldGrace === 'number' && oldGrace < 0 && munged.terminationGracePeriodSeconds === 1) munged.terminationGracePeriodSeconds = oldGrace;

  const diff = specDiff(prev, munged);
  if (diff.length > 0) {
    errs.push(forbiddenField('spec', `pod updates may not change fields other than ${UPDATABLE_POD_SPEC_FIELDS.join(',')}\n${diff.join('\n')}`));
  }
  return errs;
};

function spec(value: unknown): Record<string, unknown> {
  return isPlainObject(value) ? value : {};
}

function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v !== 'object') return false;
  for (const _ in v) return false;
  return true;
}

/** Semantic equality: an empty list or map equals an absent one, as apimachinery's Semantic.DeepEqual holds. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isEmpty(a) && isEmpty(b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    for (const key in a) if (!same(a[key], b[key])) return false;
    for (const key in b) if (!(key in a) && !isEmpty(b[key])) return false;
    return true;
  }
  return false;
}

/** `- field: old` / `+ field: new` per top-level spec field that differs. */
function specDiff(prev: Record<string, unknown>, next: Record<string, unknown>): string[] {
  const lines: string[] = [];
  for (const key of new Set([...Object.keys(prev), ...Object.keys(next)])) {
    if (same(prev[key], next[key])) continue;
    if (prev[key] !== undefined) lines.push(`- ${key}: ${JSON.stringify(prev[key])}`);
    if (next[key] !== undefined) lines.push(`+ ${key}: ${JSON.stringify(next[key])}`);
  }
  return lines;
}

function onlyAddedTolerations(next: unknown[], prev: unknown[]): FieldError[] {
  for (const old of prev) {
    const found = next.some((t) => isPlainObject(t) && isPlainObject(old) && same({ ...old, tolerationSeconds: t.tolerationSeconds }, t));
    if (!found) return [forbiddenField('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds')];
  }
  return [];
}

function onlyDeletedSchedulingGates(next: unknown[], prev: unknown[]): FieldError[] {
  const before = new Set(prev.map((g) => (isPlainObject(g) ? g.name : undefined)));
  const errs: FieldError[] = [];
  next.forEach((gate, i) => {
    const name = isPlainObject(gate) ? gate.name : undefined;
    if (!before.has(name))
      errs.push(forbiddenField(`spec.schedulingGates[${i}].name`, `only deletion is allowed, but found new scheduling gate '${String(name)}'`));
  });
  return errs;
}
