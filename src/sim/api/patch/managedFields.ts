import { SimApiError, type StatusCause } from '../../store/errors.js';
import { deepClone, deepEqual, isPlainObject } from '../../store/objects.js';
import type { KubeObject, ResourceType } from '../../types.js';
import { describePath, fromFieldsV1, leafPaths, removeAt, toFieldsV1, valueAt, type Scope } from './fieldSet.js';
import { isSetList, mergeKeyFor } from './listKeys.js';

/** One `metadata.managedFields` entry as Kubernetes serializes it. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

interface Owner {
  entry: ManagedFieldsEntry;
  fields: Set<string>;
  changed: boolean;
}

export interface WriteContext {
  manager: string;
  apiVersion: string;
  /** '' for the main resource, 'status' for the status subresource. */
  subresource: string;
  now: string;
  scope: Scope;
}

function readOwners(object: KubeObject | undefined): Owner[] {
  const raw = object?.metadata.managedFields;
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((e): e is ManagedFieldsEntry => isPlainObject(e) && typeof (e as any).manager === 'string')
    .map((entry) => ({ entry: { ...entry }, fields: fromFieldsV1(entry.fieldsV1), changed: false }));
}

function writeOwners(owners: Owner[], now: string): ManagedFieldsEntry[] | undefined {
  const entries = owners
    .filter((o) => o.fields.size > 0)
    .map((o) => {
      if (!o.changed) return o.entry;
      return { ...o.entry, time: now, fieldsV1: toFieldsV1(o.fields) };
    });
  return entries.length > 0 ? entries : undefined;
}

function ownerFor(owners: Owner[], ctx: WriteContext, operation: 'Apply' | 'Update'): Owner {
  let owner = owners.find((o) => o.entry.manager === ctx.manager && o.entry.operation === operation && (o.entry.subresource ?? '') === ctx.subresource);
  if (!owner) {
    const entry: ManagedFieldsEntry = {
      manager: ctx.manager,
      operation,
      apiVersion: ctx.apiVersion,
      time: ctx.now,
      fieldsType: 'FieldsV1',
      fieldsV1: {},
    };
    if (ctx.subresource) entry.subresource = ctx.subresource;
    owner = { entry, fields: new Set(), changed: true };
    owners.push(owner);
  }
  return owner;
}

/**
 * Ownership bookkeeping for a non-apply write (create, update, patch): the writer takes the fields whose values it
 * changed or added, other managers lose them, and fields that disappeared leave every set. Returns the
 * managedFields to store on `next`.
 */
export function trackUpdate(previous: KubeObject | undefined, next: KubeObject, ctx: WriteContext): ManagedFieldsEntry[] | undefined {
  const owners = readOwners(previous ?? next);
  const before = previous ? leafPaths(previous, ctx.scope) : new Map<string, unknown>();
  const after = leafPaths(next, ctx.scope);
  const changed: string[] = [];
  for (const [key, value] of after) if (!before.has(key) || !deepEqual(before.get(key), value)) changed.push(key);
  const removed: string[] = [];
  for (const key of before.keys()) if (!after.has(key)) removed.push(key);
  if (changed.length === 0 && removed.length === 0) return writeOwners(owners, ctx.now);

  const writer = changed.length > 0 ? ownerFor(owners, ctx, 'Update') : undefined;
  for (const owner of owners) {
    for (const key of [...changed, ...removed]) {
      if (owner !== writer && owner.fields.delete(key)) owner.changed = true;
    }
    for (const key of removed) if (owner.fields.delete(key)) owner.changed = true;
  }
  if (writer) {
    for (const key of changed) writer.fields.add(key);
    writer.changed = true;
  }
  return writeOwners(owners, ctx.now);
}

/**
 * Server-side apply of `applied` (an apply configuration) by `ctx.manager` onto `current` (undefined: create).
 * Returns the object to store (managedFields included). Throws 409 Conflict naming each contested field and its
 * manager unless `force`, which moves ownership instead. Fields this manager applied before but omits now are
 * removed when no other manager owns them.
 */
export function serverSideApply(type: ResourceType, current: KubeObject | undefined, applied: KubeObject, ctx: WriteContext, force: boolean): KubeObject {
  const owners = readOwners(current);
  const me = ownerFor(owners, ctx, 'Apply');
  const appliedPaths = leafPaths(applied, ctx.scope);
  const base: KubeObject = current
    ? deepClone(current)
    : ({ apiVersion: applied.apiVersion, kind: applied.kind, metadata: { name: applied.metadata.name } } as KubeObject);

  const causes: StatusCause[] = [];
  const contested: { owner: Owner; key: string }[] = [];
  for (const [key, value] of appliedPaths) {
    for (const owner of owners) {
      if (owner === me || !owner.fields.has(key)) continue;
      if (deepEqual(valueAt(base, key), value)) continue;
      contested.push({ owner, key });
      causes.push({
        type: 'FieldManagerConflict',
        message: `conflict with "${owner.entry.manager}"${owner.entry.operation === 'Update' ? ` using ${owner.entry.apiVersion}` : ''}`,
        field: describePath(key),
      });
    }
  }
  if (causes.length > 0 && !force) {
    const summary = causes.map((c) => `${c.message}: ${c.field}`).join(', ');
    throw new SimApiError(409, 'Conflict', `Apply failed with ${causes.length} conflict${causes.length > 1 ? 's' : ''}: ${summary}`, {
      name: applied.metadata.name,
      group: type.group,
      kind: type.plural,
      causes,
    });
  }
  for (const { owner, key } of contested) {
    owner.fields.delete(key);
    owner.changed = true;
  }

  const dropped = [...me.fields].filter((key) => !appliedPaths.has(key));
  const ownedByOthers = (key: string): boolean => owners.some((o) => o !== me && o.fields.has(key));
  // A map or list item left empty stays only if someone still owns something at or below it.
  const under = (f: string, prefix: string): boolean => f === prefix || f.startsWith(`${prefix}\u0001`);
  const ownsPrefix = (prefix: string): boolean =>
    owners.some((o) => o !== me && [...o.fields].some((f) => under(f, prefix))) || [...appliedPaths.keys()].some((f) => under(f, prefix));
  for (const key of dropped) {
    if (!ownedByOthers(key)) removeAt(base as unknown as Record<string, unknown>, key, ownsPrefix);
  }

  const merged = mergeApplied(base, applied, ctx.scope) as KubeObject;
  const nextFields = new Set(appliedPaths.keys());
  if (nextFields.size !== me.fields.size || [...nextFields].some((f) => !me.fields.has(f))) me.changed = true;
  me.fields = nextFields;
  const entries = writeOwners(owners, ctx.now);
  if (entries) merged.metadata.managedFields = entries;
  else delete merged.metadata.managedFields;
  return merged;
}

/** Merges an apply configuration into an object: maps recursively, associative lists by key, sets as sets. */
function mergeApplied(target: KubeObject, applied: KubeObject, scope: Scope): unknown {
  const out = target as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(applied)) {
    if (key === 'apiVersion' || key === 'kind') continue;
    if (scope === 'main' && key === 'status') continue;
    if (scope === 'status' && key !== 'status' && key !== 'metadata') continue;
    if (key === 'metadata') {
      const meta = out.metadata as Record<string, unknown>;
      if (scope === 'status') continue;
      for (const [mk, mv] of Object.entries(value as Record<string, unknown>)) {
        if (mk === 'managedFields' || mk === 'resourceVersion' || mk === 'uid') continue;
        meta[mk] = mergeValue(mk, meta[mk], mv);
      }
      continue;
    }
    out[key] = mergeValue(key, out[key], value);
  }
  return out;
}

function mergeValue(field: string, current: unknown, applied: unknown): unknown {
  if (isPlainObject(applied)) {
    const out: Record<string, unknown> = isPlainObject(current) ? current : {};
    for (const [k, v] of Object.entries(applied)) {
      if (v === null) delete out[k];
      else out[k] = mergeValue(k, out[k], v);
    }
    return out;
  }
  if (Array.isArray(applied) && Array.isArray(current)) {
    if (isSetList(field)) {
      const out = [...current];
      for (const v of applied) if (!out.some((c) => deepEqual(c, v))) out.push(deepClone(v));
      return out;
    }
    const key = mergeKeyFor(field, applied.length > 0 ? applied : current);
    if (key && applied.every((v) => isPlainObject(v) && v[key] !== undefined)) {
      const out = [...current];
      for (const item of applied as Record<string, unknown>[]) {
        const index = out.findIndex((c) => isPlainObject(c) && deepEqual(c[key], item[key]));
        if (index >= 0) out[index] = mergeValue('', out[index], item);
        else out.push(deepClone(item));
      }
      return out;
    }
  }
  return deepClone(applied);
}
