import { type Clock, sleep, systemClock } from './clock.js';

/**
 * A token bucket with reservations, as golang.org/x/time/rate: `qps` tokens per second refill up to `burst`.
 * `reserve()` always succeeds and returns how long the caller must wait; tokens may go negative, so callers that
 * reserve early are served first and the long-run rate never exceeds `qps`.
 */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;

  constructor(
    qps: number,
    burst: number,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(qps > 0) || !(burst >= 1)) throw new RangeError(`token bucket needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
    this.last = clock.now();
  }

  /** Takes one token; returns the delay in ms before the caller may proceed (0 when a token was available). */
  reserve(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  /** Takes a token only if one is available now (rate.Limiter.Allow). */
  tryTake(): boolean {
    if (this.reserve() === 0) return true;
    this.tokens += 1;
    return false;
  }

  /** Takes one token and waits for it. Resolves to the ms waited. An abort gives the token back. */
  async wait(signal?: AbortSignal): Promise<number> {
    const delay = this.reserve();
    if (delay <= 0) return 0;
    try {
      await sleep(this.clock, delay, signal);
    } catch (err) {
      this.tokens += 1;
      throw err;
    }
    return delay;
  }
}
