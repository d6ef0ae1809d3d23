import { childSchema, isObject, pathString, type JsonSchemaProps } from './schema.js';

/** What ObjectMeta knows; an embedded resource's metadata keeps only these (as the API server's ObjectMeta coercion). */
const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);
const TYPE_META = new Set(['apiVersion', 'kind']);

/**
 * Structural pruning, in place: removes every field the schema does not declare, as kube-apiserver does before it
 * stores a custom resource. Kept regardless of the schema: `apiVersion`, `kind`, `metadata` at the root and inside an
 * `x-kubernetes-embedded-resource`; everything below `x-kubernetes-preserve-unknown-fields` that no property
 * describes; map values (`additionalProperties`). Returns the paths of the fields it removed (`spec.foo`), which
 * `fieldValidation=Strict` turns into an error and `Warn` into warnings.
 */
export function prune(object: Record<string, unknown>, schema: JsonSchemaProps): string[] {
  const removed: string[] = [];
  pruneObject(object, schema, [], true, removed);
  return removed;
}

function pruneValue(value: unknown, schema: JsonSchemaProps | undefined, path: (string | number)[], removed: string[]): void {
  if (Array.isArray(value)) {
    const items = schema?.items;
    if (!items && schema?.['x-kubernetes-preserve-unknown-fields']) return;
    for (let i = 0; i < value.length; i++) pruneValue(value[i], items, [...path, i], removed);
  } else if (isObject(value)) {
    pruneObject(value, schema, path, schema?.['x-kubernetes-embedded-resource'] === true, removed);
  }
}

function pruneObject(
  object: Record<string, unknown>,
  schema: JsonSchemaProps | undefined,
  path: (string | number)[],
  resourceRoot: boolean,
  removed: string[],
): void {
  const preserve = schema?.['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (resourceRoot && (TYPE_META.has(key) || key === 'metadata')) {
      if (key === 'metadata' && isObject(value)) {
        // metadata is an ObjectMeta, at the root as in an embedded resource: unknown metadata fields go.
        for (const metaKey of Object.keys(value)) {
          if (!OBJECT_META_FIELDS.has(metaKey)) {
            delete value[metaKey];
            removed.push(pathString([...path, 'metadata', metaKey]));
          }
        }
      }
      continue;
    }
    const sub = schema ? childSchema(schema, key) : undefined;
    if (sub) pruneValue(value, sub, [...path, key], removed);
    else if (preserve) continue;
    else {
      delete object[key];
      removed.push(pathString([...path, key]));
    }
  }
}

/**
 * Removes `null` from object fields whose schema is not `nullable` and has no `default` (the default replaces such a
 * null instead), as kube-apiserver does before defaulting; nulls in lists stay and fail validation.
 */
export function dropNulls(value: unknown, schema: JsonSchemaProps | undefined): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) dropNulls(item, schema.items);
  } else if (isObject(value)) {
    for (const key of Object.keys(value)) {
      const sub = childSchema(schema, key);
      if (!sub) continue;
      if (value[key] === null) {
        if (!sub.nullable && sub.default === undefined) delete value[key];
      } else dropNulls(value[key], sub);
    }
  }
}

/**
 * Managed fields are computed from the request before pruning; kube-apiserver computes them after. Drops from each
 * entry's fieldsV1 the fields that pruning removed (dotted paths; a path into a list stops at the list, which custom
 * resources manage as a whole) and entries left owning nothing. Returns undefined when nothing changed.
 */
export function withoutPrunedFields(managedFields: unknown, removed: readonly string[]): unknown[] | undefined {
  if (!Array.isArray(managedFields) || managedFields.length === 0) return undefined;
  const paths = removed.filter((p) => !p.includes('[')).map((p) => p.split('.'));
  if (paths.length === 0) return undefined;
  let changed = false;
  const out: unknown[] = [];
  for (const entry of managedFields) {
    if (!isObject(entry) || !isObject(entry.fieldsV1)) {
      out.push(entry);
      continue;
    }
    const fields = structuredClone(entry.fieldsV1);
    let touched = false;
    for (const path of paths) touched = dropPath(fields, path) || touched;
    if (!touched) {
      out.push(entry);
      continue;
    }
    changed = true;
    if (Object.keys(fields).length > 0) out.push({ ...entry, fieldsV1: fields });
  }
  return changed ? out : undefined;
}

function dropPath(fields: Record<string, unknown>, path: string[]): boolean {
  const [head, ...rest] = path;
  const key = `f:${head}`;
  const child = fields[key];
  if (!isObject(child)) return false;
  if (rest.length === 0) {
    delete fields[key];
    return true;
  }
  const dropped = dropPath(child, rest);
  // A parent kept only for the dropped child ({".": {}} marks the parent itself as owned) goes with it.
  if (dropped && Object.keys(child).length === 0) delete fields[key];
  return dropped;
}
