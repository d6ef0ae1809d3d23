/**
 * Waits until `check` returns something other than undefined or false (polling every 20 ms) and returns it; fails
 * naming `what` after `timeoutMs`. A wait on a condition, never on time: the deadline only bounds a broken test.
 */
export async function until<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
