/** Shared helpers of the upstream-behaviour scenarios: everything goes through @kubernetes/client-node over HTTP. */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/** Polls `read` until `accept` holds for its value (no fixed sleeps); fails naming `what` after `ms`. */
export async function until<T>(what: string, read: () => Promise<T>, accept: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}; last seen: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function condition(obj: any, type: string): Record<string, string> | undefined {
  return (obj?.status?.conditions ?? []).find((c: { type?: string }) => c.type === type);
}
