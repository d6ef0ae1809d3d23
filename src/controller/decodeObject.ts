import { isDns1123Label, isDns1123Subdomain } from '../util/dnsNames.js';

/**
 * Why `item` (one element of a list's `items`, or a watch event's object) is not a Kubernetes object rollplane can
 * cache, or undefined when it is one. A kube-apiserver never sends such an object; a broken or hostile member cluster
 * may (attack 15, F4). What is checked is what the cache and every reader rely on: a JSON object, with a `metadata`
 * object whose `name` is a DNS-1123 subdomain (the name rule of every resource rollplane watches) and whose
 * `namespace`, when present, a DNS-1123 label. So `__proto__`, a number or an empty string as a name never becomes a
 * cache key or an index value. The reason names no value (the object may be anything, of any size).
 */
export function malformedObject(item: unknown): string | undefined {
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return `not an object (${item === null ? 'null' : Array.isArray(item) ? 'an array' : typeof item})`;
  const metadata = (item as { metadata?: unknown }).metadata;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return 'metadata is missing or not an object';
  const { name, namespace } = metadata as { name?: unknown; namespace?: unknown };
  if (typeof name !== 'string') return 'metadata.name is not a string';
  if (isDns1123Subdomain(name).length > 0) return 'metadata.name is not a valid name (DNS-1123 subdomain)';
  if (namespace !== undefined && (typeof namespace !== 'string' || (namespace !== '' && isDns1123Label(namespace).length > 0))) {
    return 'metadata.namespace is not a valid namespace (DNS-1123 label)';
  }
  return undefined;
}
