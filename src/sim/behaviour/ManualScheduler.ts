import type { Scheduler } from './scheduler.js';

interface Timer {
  due: number;
  seq: number;
  fn: () => void;
}

/** A Scheduler whose time moves only when a test calls `advance`; due timers then run in due order. */
export class ManualScheduler implements Scheduler {
  private time: number;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): () => void {
    const timer: Timer = { due: this.time + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way (including ones they schedule). */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const next = this.nextDue();
      if (!next || next.due > end) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = Math.max(this.time, next.due);
      next.fn();
    }
    this.time = end;
  }

  pending(): number {
    return this.timers.length;
  }

  private nextDue(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t;
    return best;
  }
}
