/** Small helpers over plain JSON values, shared by the store and the patch engines. */

export function isPlainObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Freezes a JSON tree in place so shared stored objects cannot be mutated by any reader. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * A mutable deep copy of a JSON tree (frozen or not); `undefined` values are dropped, as in the API's JSON. Through
 * V8's JSON parser rather than by copying key by key: objects keyed by data (an IPPool's `status.ipv4.allocated` has
 * IP addresses as keys) built key by key exhaust V8's hidden-class transitions from the empty object, after which
 * every object copied that way gets a hidden class of its own — at 10,000 pools that was 1.9 million of them, ~110 MB,
 * and megamorphic property access everywhere. JSON.parse does not share that fate.
 */
export function deepClone<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Structural equality of JSON values; `undefined`-valued keys count as absent. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ak = Object.keys(a).filter((k) => (a as any)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as any)[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!deepEqual((a as any)[k], (b as any)[k])) return false;
  return true;
}
