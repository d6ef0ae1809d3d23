/**
 * Whether `value` would serialize to more than `limit` bytes of JSON, found by walking it with an early exit instead of
 * serializing it: the cost estimate counts fields, not bytes, so a cheap query could still ask for megabytes — 29
 * aliases of a page of rollouts with 237 KB selectors, or of a 235 KB ClusterVersion spec, ran the process out of
 * memory while JSON.stringify built the answer (issue 34, attack 11, F2). Counts UTF-16 code units, as `length` does,
 * and a shared object once per place it appears, as JSON.stringify writes it. Cyclic values are not expected (GraphQL
 * results are trees) and would count until the limit.
 */
export function exceedsJsonBytes(value: unknown, limit: number): boolean {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') bytes += item.length + 2;
    else if (item === null || typeof item !== 'object') bytes += 8;
    else if (Array.isArray(item)) {
      bytes += 2 + item.length;
      for (const element of item) stack.push(element);
    } else {
      bytes += 2;
      for (const key in item) {
        bytes += key.length + 4;
        stack.push((item as Record<string, unknown>)[key]);
      }
    }
    if (bytes > limit) return true;
  }
  return false;
}

/** The largest answer rollplane serializes over HTTP; a page of 1,000 events is about 0.3 MB. */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
