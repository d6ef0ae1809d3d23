/**
 * Time as the simulated cluster sees it. Everything in src/sim/behaviour reads the clock and sets timers only through
 * a Scheduler, so a test can drive time by hand (ManualScheduler) and timestamps written into objects follow it.
 */
export interface Scheduler {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms` (0 → on a later turn of the event loop, never synchronously). Returns a cancel function. */
  after(ms: number, fn: () => void): () => void;
}

export const realScheduler: Scheduler = {
  now: () => Date.now(),
  after(ms, fn) {
    if (ms <= 0) {
      const handle = setImmediate(fn);
      return () => clearImmediate(handle);
    }
    const handle = setTimeout(fn, ms);
    handle.unref?.();
    return () => clearTimeout(handle);
  },
};
