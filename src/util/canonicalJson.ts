/**
 * JSON with every object's keys sorted, so that equal values give the same text whatever order their keys came in:
 * for hashing (a ClusterVersion spec's version name, a pod template's hash) and for grouping equal values (a
 * subscription's variables). Arrays keep their order. Otherwise it is JSON.stringify's: `toJSON` is honoured, undefined
 * members and functions are left out (and `undefined` itself gives undefined, as JSON.stringify does). Integer-like
 * keys come first in ascending order, as in any JavaScript object; the ClusterVersion names already stored were
 * hashed so, so this order must not change.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) => {
    if (member === null || typeof member !== 'object' || Array.isArray(member)) return member;
    const record = member as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((key) => [key, record[key]]),
    );
  });
}
