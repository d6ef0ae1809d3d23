import { systemClock, type Clock } from '../controller/clock.js';
import { TokenBucket } from '../controller/TokenBucket.js';

/** Idle buckets are dropped after this long (a full bucket carries no state worth keeping). */
const IDLE_MS = 10 * 60_000;

/** Per-caller token buckets for mutations (per token, or per client address without authentication). */
export class MutationRateLimiter {
  private readonly buckets = new Map<string, { bucket: TokenBucket; usedAt: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly burst: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Takes one token for `key`: 0 when allowed, else the milliseconds until one is available (nothing is taken). */
  take(key: string): number {
    const now = this.clock.now();
    let entry = this.buckets.get(key);
    if (!entry) {
      entry = { bucket: new TokenBucket(this.perMinute / 60, this.burst, this.clock), usedAt: now };
      this.buckets.set(key, entry);
      if (this.buckets.size > 10_000) this.evictIdle(now);
    }
    entry.usedAt = now;
    if (entry.bucket.tryTake()) return 0;
    return Math.max(1, Math.ceil(60_000 / this.perMinute));
  }

  private evictIdle(now: number): void {
    for (const [key, entry] of this.buckets) if (now - entry.usedAt > IDLE_MS) this.buckets.delete(key);
  }
}
