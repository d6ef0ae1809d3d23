/** How long `until` waits at most, and how often it looks. */
export interface UntilOptions {
  /** Bounds a broken test only; a passing test returns as soon as the condition holds. Default 30 s. */
  timeoutMs?: number;
  /** Time between two checks. Default 20 ms; a check that is cheap and awaits a fast change may look more often. */
  intervalMs?: number;
}

/**
 * Waits until `check` returns something other than undefined or false and returns it; fails naming `what` after the
 * timeout. A wait on a condition, never on time: the deadline only bounds a broken test. `what` may be a function so
 * that the failure can say what was seen instead (read only when the wait fails).
 *
 * The one polling helper of the suite: rigs that offer their own `waitFor` delegate to it.
 */
export async function until<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: number | UntilOptions = {},
): Promise<T> {
  const { timeoutMs = 30_000, intervalMs = 20 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
