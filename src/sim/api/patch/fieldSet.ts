import { deepEqual, isPlainObject } from '../../store/objects.js';
import { isSetList, mergeKeyFor } from './listKeys.js';

/**
 * Leaf field paths in the FieldsV1 vocabulary: `f:<field>` for a map key, `k:{"name":"c"}` for an item of an
 * associative list, `v:<json>` for a member of a set list. Atomic lists and scalars are leaves. A path is an array of
 * segments; `pathKey` turns it into a map key.
 */
export type FieldPath = string[];

export function pathKey(path: FieldPath): string {
  return path.join('\u0001');
}

export function keyPath(key: string): FieldPath {
  return key.split('\u0001');
}

/** metadata fields the server owns; never part of anyone's managed set. */
const SERVER_METADATA = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'generateName',
  'selfLink',
]);

export type Scope = 'main' | 'status' | 'all';

/** Leaf paths of an object → their values. `scope` 'main' leaves .status out, 'status' keeps only .status. */
export function leafPaths(object: Record<string, unknown>, scope: Scope): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [key, value] of Object.entries(object)) {
    if (key === 'apiVersion' || key === 'kind' || value === undefined) continue;
    if (scope === 'main' && key === 'status') continue;
    if (scope === 'status' && key !== 'status') continue;
    if (key === 'metadata' && isPlainObject(value)) {
      for (const [mk, mv] of Object.entries(value)) {
        if (SERVER_METADATA.has(mk) || mv === undefined) continue;
        walk(`f:metadata${SEP}f:${mk}`, mk, mv, out);
      }
      continue;
    }
    walk(`f:${key}`, key, value, out);
  }
  return out;
}

/** The segment separator of a path key (pathKey); keys are built segment by segment as strings, not joined arrays. */
const SEP = '\u0001';

function walk(key: string, field: string, value: unknown, out: Map<string, unknown>): void {
  if (isPlainObject(value)) {
    let empty = true;
    for (const k in value) {
      const v = value[k];
      if (v === undefined) continue;
      empty = false;
      walk(`${key}${SEP}f:${k}`, k, v, out);
    }
    if (empty) out.set(key, value);
    return;
  }
  if (Array.isArray(value) && value.length > 0) {
    if (isSetList(field) && value.every((v) => !isPlainObject(v) && !Array.isArray(v))) {
      for (const v of value) out.set(`${key}${SEP}v:${JSON.stringify(v)}`, v);
      return;
    }
    const mergeKey = mergeKeyFor(field, value);
    if (mergeKey && value.every((v) => isPlainObject(v) && v[mergeKey] !== undefined)) {
      for (const item of value as Record<string, unknown>[]) {
        const itemKey = `${key}${SEP}${itemSegment(mergeKey, item[mergeKey])}`;
        for (const k in item) if (item[k] !== undefined) walk(`${itemKey}${SEP}f:${k}`, k, item[k], out);
      }
      return;
    }
  }
  out.set(key, value);
}

export function itemSegment(key: string, id: unknown): string {
  return `k:${JSON.stringify({ [key]: id })}`;
}

/** FieldsV1 JSON for a set of paths (list items and set members carry `.: {}` as Kubernetes writes them). */
export function toFieldsV1(paths: Iterable<string>): Record<string, unknown> {
  const root: Record<string, any> = {};
  for (const key of paths) {
    let node = root;
    for (const segment of keyPath(key)) {
      node = node[segment] ??= {};
      if (segment.startsWith('k:') && !node['.']) node['.'] = {};
    }
  }
  return root;
}

/** Leaf path keys of a FieldsV1 tree. */
export function fromFieldsV1(tree: unknown): Set<string> {
  const out = new Set<string>();
  const visit = (node: unknown, key: string): void => {
    let leaf = true;
    if (isPlainObject(node)) {
      for (const child in node) {
        if (child === '.') continue;
        leaf = false;
        visit(node[child], key === '' ? child : `${key}${SEP}${child}`);
      }
    }
    if (leaf && key !== '') out.add(key);
  };
  visit(tree, '');
  return out;
}

/** `.spec.template.spec.containers[name="c"].image`, the way Kubernetes prints a field in a conflict. */
export function describePath(key: string): string {
  let out = '';
  for (const segment of keyPath(key)) {
    if (segment.startsWith('f:')) out += `.${segment.slice(2)}`;
    else if (segment.startsWith('k:')) {
      const parts = Object.entries(JSON.parse(segment.slice(2)) as Record<string, unknown>)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',');
      out += `[${parts}]`;
    } else if (segment.startsWith('v:')) out += `[${segment.slice(2)}]`;
  }
  return out;
}

/** The value at a path, or undefined. */
export function valueAt(object: unknown, key: string): unknown {
  let node: unknown = object;
  for (const segment of keyPath(key)) {
    if (segment.startsWith('f:')) {
      if (!isPlainObject(node)) return undefined;
      node = node[segment.slice(2)];
    } else if (segment.startsWith('k:')) {
      if (!Array.isArray(node)) return undefined;
      const [[k, id]] = Object.entries(JSON.parse(segment.slice(2)) as Record<string, unknown>) as [[string, unknown]];
      node = node.find((item) => isPlainObject(item) && deepEqual(item[k], id));
    } else if (segment.startsWith('v:')) {
      if (!Array.isArray(node)) return undefined;
      const v = JSON.parse(segment.slice(2)) as unknown;
      node = node.some((item) => deepEqual(item, v)) ? v : undefined;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * Removes the field at a path from a mutable object, then prunes what removal left hollow: list items reduced to their
 * key, and maps left empty (unless `keep` says someone owns that map itself).
 */
export function removeAt(object: Record<string, unknown>, key: string, keep: (key: string) => boolean): void {
  const path = keyPath(key);
  const nodes: unknown[] = [object];
  let node: unknown = object;
  for (const segment of path.slice(0, -1)) {
    node = step(node, segment);
    if (node === undefined) return;
    nodes.push(node);
  }
  const last = path[path.length - 1]!;
  const parent = path[path.length - 2];
  // A list item's key field goes with the item (below), never alone: the item could no longer be found by its key.
  const isItemKey = parent?.startsWith('k:') && last.startsWith('f:') && last.slice(2) in (JSON.parse(parent.slice(2)) as object);
  if (!isItemKey) detach(nodes[nodes.length - 1], last);
  for (let depth = path.length - 1; depth >= 1; depth--) {
    const child = nodes[depth];
    const prefix = pathKey(path.slice(0, depth));
    const segment = path[depth - 1]!;
    const hollow = segment.startsWith('k:')
      ? isPlainObject(child) && Object.keys(child).every((k) => k in (JSON.parse(segment.slice(2)) as object))
      : (isPlainObject(child) && Object.keys(child).length === 0) || (Array.isArray(child) && child.length === 0);
    if (!hollow || keep(prefix)) return;
    detach(nodes[depth - 1], segment);
  }
}

function step(node: unknown, segment: string): unknown {
  if (segment.startsWith('f:')) return isPlainObject(node) ? node[segment.slice(2)] : undefined;
  if (segment.startsWith('k:') && Array.isArray(node)) {
    const [[k, id]] = Object.entries(JSON.parse(segment.slice(2)) as Record<string, unknown>) as [[string, unknown]];
    return node.find((item) => isPlainObject(item) && deepEqual(item[k], id));
  }
  return undefined;
}

function detach(parent: unknown, segment: string): void {
  if (segment.startsWith('f:')) {
    if (isPlainObject(parent)) delete parent[segment.slice(2)];
  } else if (Array.isArray(parent)) {
    const index = segment.startsWith('k:')
      ? (() => {
          const [[k, id]] = Object.entries(JSON.parse(segment.slice(2)) as Record<string, unknown>) as [[string, unknown]];
          return parent.findIndex((item) => isPlainObject(item) && deepEqual(item[k], id));
        })()
      : parent.findIndex((item) => deepEqual(item, JSON.parse(segment.slice(2))));
    if (index >= 0) parent.splice(index, 1);
  }
}
