/** How long `until` waits at most, and how often it looks. */
export interface UntilOptions {
  /** Bounds a broken test only; a passing test returns as soon as the condition holds. Default 30 s. */
  timeoutMs?: number;
  /**
   * A fixed time between two checks, for in-process checks that are cheap and await a fast change. Without it, `until`
   * looks every 20 ms at first and backs off to POLL_CEILING_MS.
   */
  intervalMs?: number;
}

/** The first interval of the default schedule. */
export const POLL_FLOOR_MS = 20;
/**
 * The default schedule's longest interval: a wait that lasts looks four times a second. Checks often read the GraphQL
 * API, whose per-caller query-cost budget (ROLLPLANE_QUERY_COST_PER_MINUTE: 600,000 a minute, 100,000 of burst) every
 * local client shares without authentication: a rollout query of cost ~800 polled every 20 ms spends ~40,000 a second
 * and was refused RATE_LIMITED after about 4 s of waiting — so a wait that lasted longer on a loaded machine failed
 * (test/e2e/agentPool/coexist.test.ts). Four polls a second of that query spend ~3,200: a third of the budget's rate,
 * however long the wait.
 */
export const POLL_CEILING_MS = 250;

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
  const { timeoutMs = 30_000, intervalMs } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  let interval = intervalMs ?? POLL_FLOOR_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
    if (intervalMs === undefined) interval = Math.min(POLL_CEILING_MS, Math.round(interval * 1.5));
  }
}
