import { describe, expect, it } from 'vitest';
import { CallerRateLimiter } from '../../src/auth/CallerRateLimiter.js';
import { systemClock, type Clock } from '../../src/util/clock.js';

/** A clock the test moves by hand. */
function manualClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  return { ...systemClock, now: () => now, wallNow: () => now, advance: (ms) => (now += ms) };
}

describe('CallerRateLimiter', () => {
  it('takes what fits in the bucket and says how long the rest takes to refill', () => {
    const clock = manualClock();
    const limiter = new CallerRateLimiter(60_000, 1_000, clock); // 1,000 a second, burst 1,000
    expect(limiter.take('a', 600)).toBe(0);
    expect(limiter.take('a', 600)).toBe(200);
    expect(limiter.take('b', 600)).toBe(0); // another caller has its own bucket
    clock.advance(200);
    expect(limiter.take('a', 600)).toBe(0);
  });

  it('lets an amount above the burst through from a full bucket and then makes the caller wait for all of it', () => {
    const clock = manualClock();
    const limiter = new CallerRateLimiter(60_000, 1_000, clock);
    expect(limiter.take('a', 10_000)).toBe(0);
    // 9,000 in debt: the next unit waits until 9,001 have refilled (before: the charge was capped at the burst, 1 ms).
    expect(limiter.take('a', 1)).toBe(9_001);
    clock.advance(9_001);
    expect(limiter.take('a', 1)).toBe(0);
  });
});
