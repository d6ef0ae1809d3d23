import { type Clock, systemClock } from '../util/clock.js';
import { TokenBucket } from '../util/TokenBucket.js';

/**
 * How long to wait before an item is retried, as client-go's workqueue.TypedRateLimiter. `when` is called once per
 * failure and advances the item's backoff; `forget` resets it once the item succeeded.
 */
export interface RateLimiter {
  when(key: string): number;
  forget(key: string): void;
  numRequeues(key: string): number;
}

/** base · 2^failures, capped at max (client-go ItemExponentialFailureRateLimiter). */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    readonly baseDelayMs = 5,
    readonly maxDelayMs = 60_000,
  ) {}

  when(key: string): number {
    const exp = this.failures.get(key) ?? 0;
    this.failures.set(key, exp + 1);
    // 2^exp overflows to Infinity long after it passes any sane cap; min() handles both.
    return Math.min(this.baseDelayMs * 2 ** exp, this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/** An overall retry rate for all items (client-go BucketRateLimiter); has no per-item memory. */
export class BucketRateLimiter implements RateLimiter {
  readonly bucket: TokenBucket;

  constructor(qps = 10, burst = 100, clock: Clock = systemClock) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }

  when(): number {
    return this.bucket.reserve();
  }

  forget(): void {}

  numRequeues(): number {
    return 0;
  }
}

/** The worst (longest) delay of several limiters; every limiter sees every call. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(key: string): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(key));
    return max;
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(key));
    return max;
  }
}

export interface ControllerRateLimiterOptions {
  /** First retry delay; default 5 ms. */
  baseDelayMs?: number;
  /** Longest per-item retry delay; default 60 s (controller-runtime uses 1000 s). */
  maxDelayMs?: number;
  /** Overall retry rate; default 10/s. */
  qps?: number;
  /** Default 100. */
  burst?: number;
  clock?: Clock;
}

/** max(per-item exponential, overall token bucket): controller-runtime's default limiter with our cap. */
export function defaultControllerRateLimiter(options: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialFailureRateLimiter(options.baseDelayMs ?? 5, options.maxDelayMs ?? 60_000),
    new BucketRateLimiter(options.qps ?? 10, options.burst ?? 100, options.clock ?? systemClock),
  );
}
