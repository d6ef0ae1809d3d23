/**
 * Time as the controller runtime sees it. Every component that waits (work queue delays, rate limiters, leader
 * election, informer backoff) takes a Clock so tests drive time with FakeClock instead of sleeping.
 */
export interface TimerHandle {
  /** Opaque; only ever passed back to clearTimeout of the clock that made it. */
  readonly __timer?: unknown;
}

export interface Clock {
  /** Milliseconds; monotonic for the system clock. */
  now(): number;
  /** Wall-clock milliseconds since the epoch (for timestamps written to Kubernetes or the database). */
  wallNow(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Real time. Timers are unref'd: a pending delay never keeps the process alive on its own. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return t as unknown as TimerHandle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as unknown as NodeJS.Timeout);
  },
};

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
