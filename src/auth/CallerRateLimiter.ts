import { systemClock, type Clock } from '../util/clock.js';

/** Idle buckets are dropped after this long (a full bucket carries no state worth keeping). */
const IDLE_MS = 10 * 60_000;
const MAX_BUCKETS = 10_000;

interface Bucket {
  tokens: number;
  last: number;
}

/**
 * Per-caller token buckets (per token, or per client address without authentication) that refill at `perMinute` up to
 * `burst`. A call takes `amount` units: 1 per mutation, or a query's estimated cost, so that a few expensive queries
 * exhaust a caller's budget as fast as many cheap ones.
 */
export class CallerRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perMinute: number,
    private readonly burst: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Takes `amount` units for `key`: 0 when allowed, else the ms until they would be available (nothing is taken). An
   * amount above the burst is allowed once the bucket is full and leaves it in debt for the rest, so that the caller
   * waits as long as that much work costs: capped at the burst, a replay page of a heavy document (19,630 units × 500
   * events) cost one burst, and a viewer received 51 MB every few seconds (issue 34, attack 12).
   */
  take(key: string, amount = 1): number {
    const now = this.clock.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.evictFull(now);
      bucket = { tokens: this.burst, last: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.last) * this.perMinute) / 60_000);
    bucket.last = now;
    const wanted = Math.min(amount, this.burst);
    if (bucket.tokens >= wanted) {
      bucket.tokens -= amount;
      return 0;
    }
    return Math.max(1, Math.ceil(((wanted - bucket.tokens) * 60_000) / this.perMinute));
  }

  /** Drops buckets that have refilled completely (they hold no state); keeps the map bounded under many callers. */
  private evictFull(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.last > IDLE_MS || bucket.tokens + ((now - bucket.last) * this.perMinute) / 60_000 >= this.burst) this.buckets.delete(key);
    }
  }
}
