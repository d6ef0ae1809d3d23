import type { KubeObject } from '../types.js';

/**
 * Stored objects are frozen, so their JSON never changes: serialize each version once and reuse the string for every
 * GET, list page and watch event that carries it.
 */
const cache = new WeakMap<object, string>();

export function objectJson(object: KubeObject): string {
  let json = cache.get(object);
  if (json === undefined) {
    json = JSON.stringify(object);
    if (Object.isFrozen(object)) cache.set(object, json);
  }
  return json;
}
