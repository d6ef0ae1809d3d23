import { badRequest } from '../../store/errors.js';
import { deepClone, isPlainObject } from '../../store/objects.js';
import { isSetList, mergeKeyFor } from './listKeys.js';

const SET_ORDER = '$setElementOrder/';
const DELETE_FROM = '$deleteFromPrimitiveList/';

/**
 * Strategic merge patch for the built-in kinds: a JSON merge patch in which associative lists (containers, env,
 * volumes, ports, conditions, … see listKeys.ts) merge item by item on their key, set lists (finalizers) merge as
 * sets, and the directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` apply.
 * `$setElementOrder/<f>` is accepted and ignored (existing order kept, new items appended). Pure.
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) throw badRequest('strategic merge patch must be a JSON object');
  return mergeMap(isPlainObject(target) ? target : {}, patch);
}

function mergeMap(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') return stripDirectives(patch) as Record<string, unknown>;
  if (directive !== undefined) throw badRequest(`unknown patch directive "${String(directive)}"`);

  const out: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$retainKeys' || key.startsWith(SET_ORDER)) continue;
    if (key.startsWith(DELETE_FROM)) {
      const field = key.slice(DELETE_FROM.length);
      if (Array.isArray(out[field]) && Array.isArray(value)) {
        out[field] = (out[field] as unknown[]).filter((v) => !value.includes(v));
      }
      continue;
    }
    if (value === null) {
      delete out[key];
    } else if (isPlainObject(value)) {
      const merged = mergeMap(isPlainObject(out[key]) ? (out[key] as Record<string, unknown>) : {}, value);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    } else if (Array.isArray(value)) {
      out[key] = mergeList(key, out[key], value);
    } else {
      out[key] = value;
    }
  }
  const retain = patch.$retainKeys;
  if (Array.isArray(retain)) {
    for (const key of Object.keys(out)) if (!retain.includes(key)) delete out[key];
  }
  return out;
}

function mergeList(field: string, current: unknown, patch: unknown[]): unknown[] {
  if (patch.some((item) => isPlainObject(item) && item.$patch === 'replace')) {
    return patch.filter((item) => !(isPlainObject(item) && item.$patch === 'replace')).map(stripDirectives);
  }
  const existing = Array.isArray(current) ? current : [];
  if (isSetList(field)) {
    const out = [...existing];
    for (const v of patch) if (!out.includes(v)) out.push(v);
    return out;
  }
  const key = mergeKeyFor(field, patch.length > 0 ? patch : existing);
  if (!key || !patch.every(isPlainObject)) return patch.map(stripDirectives);

  const out: unknown[] = existing.map((item) => item);
  for (const item of patch as Record<string, unknown>[]) {
    const id = item[key];
    const index = out.findIndex((e) => isPlainObject(e) && e[key] === id);
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) {
      const merged = mergeMap(out[index] as Record<string, unknown>, item);
      if (merged === undefined) out.splice(index, 1);
      else out[index] = merged;
    } else {
      out.push(stripDirectives(item));
    }
  }
  return out;
}

function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isPlainObject(value)) return deepClone(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith(SET_ORDER) || k.startsWith(DELETE_FROM)) continue;
    if (v !== null) out[k] = stripDirectives(v);
  }
  return out;
}
