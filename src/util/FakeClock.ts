import type { Clock, TimerHandle } from './clock.js';

interface FakeTimer extends TimerHandle {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * Manually advanced time for tests. `advance(ms)` fires due timers in time order (ties in creation order), letting
 * promise continuations run between timers so async code scheduled by one timer can arm the next.
 */
export class FakeClock implements Clock {
  private current: number;
  private readonly epoch: number;
  private seq = 0;
  private timers: FakeTimer[] = [];

  constructor(start = 0, epoch = Date.UTC(2026, 0, 1)) {
    this.current = start;
    this.epoch = epoch;
  }

  now(): number {
    return this.current;
  }

  wallNow(): number {
    return this.epoch + this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    (handle as FakeTimer).cancelled = true;
  }

  /** Number of armed timers (for asserting that a component keeps one timer only). */
  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await flushMicrotasks();
      this.timers = this.timers.filter((t) => !t.cancelled);
      let next: FakeTimer | undefined;
      for (const t of this.timers) {
        if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.current = Math.max(this.current, next.at);
      next.cancelled = true;
      next.fn();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

/** Lets queued promise continuations run (several rounds, since continuations schedule continuations). */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
