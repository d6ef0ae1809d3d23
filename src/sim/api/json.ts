import { isStoredVersion } from '../store/MemoryStore.js';
import type { KubeObject } from '../types.js';

/**
 * Stored versions never change (frozen, or immutable by contract), so their JSON never changes: serialize each version once and reuse the string for every
 * GET, list page and watch event that carries it. Only current versions need it: the watch hub forgets a version's
 * JSON once a newer one replaces it (the event history still holds the object; a rare resume re-serializes it).
 */
const cache = new WeakMap<object, string>();

export function objectJson(object: KubeObject): string {
  let json = cache.get(object);
  if (json === undefined) {
    json = JSON.stringify(object);
    if (isStoredVersion(object)) cache.set(object, json);
  }
  return json;
}

/** Drops the cached JSON of a version that is no longer current. */
export function forgetJson(object: KubeObject): void {
  cache.delete(object);
}
