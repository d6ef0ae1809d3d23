/** Shared helpers of the upstream-behaviour scenarios: everything goes through @kubernetes/client-node over HTTP. */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { until } from '../../../helpers/until.js';

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/**
 * Reads through the API until `accept` holds for what was read (the shared `until` polls); a failure shows the last
 * value read, which is what a broken scenario needs to be understood.
 */
export async function readUntil<T>(what: string, read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  let last: T | undefined;
  const accepted = await until(
    () => `${what}; last seen: ${JSON.stringify(last)?.slice(0, 2000)}`,
    async () => {
      last = await read();
      return accept(last) && { value: last };
    },
    { timeoutMs, intervalMs: 10 },
  );
  return accepted.value;
}

export function condition(obj: any, type: string): Record<string, string> | undefined {
  return (obj?.status?.conditions ?? []).find((c: { type?: string }) => c.type === type);
}
