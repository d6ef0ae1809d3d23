import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FakeClock, flushMicrotasks } from '../../src/util/FakeClock.js';
import { BucketRateLimiter, defaultControllerRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter } from '../../src/controller/rateLimiters.js';
import { TokenBucket } from '../../src/util/TokenBucket.js';
import { WorkQueue } from '../../src/controller/WorkQueue.js';

function newQueue(clock = new FakeClock(), registry?: Registry): WorkQueue {
  return new WorkQueue({ name: 'test', clock, registry, rateLimiter: defaultControllerRateLimiter({ clock }) });
}

describe('WorkQueue', () => {
  it('dedupes a key that is queued more than once', () => {
    const q = newQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(q.tryGet()).toBe('a');
    expect(q.tryGet()).toBe('b');
    expect(q.tryGet()).toBeUndefined();
  });

  it('never hands one key to two workers', async () => {
    const q = newQueue();
    q.add('a');
    const first = await q.get();
    q.add('a');
    // 'a' is processing: a second worker must not get it.
    expect(q.tryGet()).toBeUndefined();
    let second: string | undefined = 'pending';
    void q.get().then((k) => (second = k));
    await flushMicrotasks();
    expect(second).toBe('pending');
    q.done(first!);
    await flushMicrotasks();
    expect(second).toBe('a');
  });

  it('hands a key re-added while in flight out again after done, once', () => {
    const q = newQueue();
    q.add('a');
    expect(q.tryGet()).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0);
    q.done('a');
    expect(q.len()).toBe(1);
    expect(q.tryGet()).toBe('a');
    q.done('a');
    expect(q.len()).toBe(0);
  });

  it('keeps FIFO order among different keys', () => {
    const q = newQueue();
    for (const k of ['c', 'a', 'b']) q.add(k);
    expect([q.tryGet(), q.tryGet(), q.tryGet()]).toEqual(['c', 'a', 'b']);
  });

  it('wakes a waiting worker when a key is added', async () => {
    const q = newQueue();
    const pending = q.get();
    q.add('x');
    expect(await pending).toBe('x');
  });

  it('adds delayed keys in ready-time order with a single timer', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('late', 300);
    q.addAfter('early', 100);
    q.addAfter('mid', 200);
    expect(clock.pendingTimers()).toBe(1);
    expect(q.len()).toBe(0);
    await clock.advance(99);
    expect(q.len()).toBe(0);
    await clock.advance(1);
    expect(q.tryGet()).toBe('early');
    await clock.advance(200);
    expect([q.tryGet(), q.tryGet()]).toEqual(['mid', 'late']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('keeps the earlier ready time when a waiting key is added after again', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('a', 500);
    q.addAfter('a', 100);
    q.addAfter('a', 900);
    expect(q.delayed()).toBe(1);
    await clock.advance(100);
    expect(q.tryGet()).toBe('a');
    q.done('a');
    await clock.advance(1000);
    expect(q.len()).toBe(0);
  });

  it('adds at once when the delay is zero or negative', () => {
    const q = newQueue();
    q.addAfter('a', 0);
    q.addAfter('b', -5);
    expect(q.len()).toBe(2);
  });

  it('backs off a failing key exponentially from 5 ms up to the cap and forgets on success', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 't', clock, rateLimiter: new ItemExponentialFailureRateLimiter(5, 1000) });
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const before = clock.now();
      q.addRateLimited('a');
      let got: string | undefined;
      for (got = q.tryGet(); got === undefined; got = q.tryGet()) await clock.advance(1);
      delays.push(clock.now() - before);
      q.done(got);
    }
    expect(delays).toEqual([5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    expect(q.numRequeues('a')).toBe(10);
    expect(q.retries()).toEqual({ a: 10 });
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    expect(q.retries()).toEqual({});
  });

  it('returns undefined from get after shutdown and ignores adds', async () => {
    const q = newQueue();
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).toBeUndefined();
    q.add('a');
    expect(await q.get()).toBeUndefined();
  });

  it('drains: shutDownWithDrain resolves only after in-flight keys are done', async () => {
    const q = newQueue();
    q.add('a');
    q.add('b');
    const a = q.tryGet()!;
    const b = q.tryGet()!;
    let drained = false;
    const p = q.shutDownWithDrain().then(() => (drained = true));
    await flushMicrotasks();
    expect(drained).toBe(false);
    q.done(a);
    await flushMicrotasks();
    expect(drained).toBe(false);
    q.done(b);
    await p;
    expect(drained).toBe(true);
  });

  it('cancels its delay timer on shutdown', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('a', 100);
    q.shutDown();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('reports workqueue metrics under its name', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const q = newQueue(clock, registry);
    q.add('a');
    q.add('b');
    q.add('a');
    await clock.advance(2000);
    const key = q.tryGet()!;
    await clock.advance(3000);
    const text = await registry.metrics();
    expect(text).toContain('workqueue_adds_total{name="test"} 2');
    expect(text).toContain('workqueue_depth{name="test"} 1');
    expect(text).toContain('workqueue_unfinished_work_seconds{name="test"} 3');
    expect(text).toContain('workqueue_longest_running_processor_seconds{name="test"} 3');
    expect(text).toMatch(/workqueue_queue_duration_seconds_sum\{name="test"\} 2\n/);
    q.done(key);
    q.addRateLimited('c');
    const after = await registry.metrics();
    expect(after).toContain('workqueue_retries_total{name="test"} 1');
    expect(after).toMatch(/workqueue_work_duration_seconds_count\{name="test"\} 1\n/);
    expect(after).toContain('workqueue_unfinished_work_seconds{name="test"} 0');
  });
});

describe('rate limiters', () => {
  it('token bucket allows a burst, then one token per 1/qps', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 100, clock);
    const delays = Array.from({ length: 103 }, () => bucket.reserve());
    expect(delays.slice(0, 100).every((d) => d === 0)).toBe(true);
    expect(delays.slice(100)).toEqual([100, 200, 300]);
  });

  it('token bucket admits qps per second over a long run', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 5, clock);
    let admitted = 0;
    for (let ms = 0; ms < 10_000; ms += 10) {
      while (bucket.tryTake()) admitted++;
      await clock.advance(10);
    }
    // burst 5, then 10/s over the 9.99 s between the first and the last attempt
    expect(admitted).toBe(5 + 99);
  });

  it('token bucket wait() sleeps on the clock and gives the token back on abort', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    expect(await bucket.wait()).toBe(0);
    let waited: number | undefined;
    void bucket.wait().then((w) => (waited = w));
    await clock.advance(999);
    expect(waited).toBeUndefined();
    await clock.advance(1);
    expect(waited).toBe(1000);
    const ac = new AbortController();
    const aborted = bucket.wait(ac.signal);
    ac.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    await clock.advance(1000);
    expect(bucket.reserve()).toBe(0);
  });

  it('max-of returns the longest delay and forgets in every limiter', () => {
    const clock = new FakeClock();
    const limiter = new MaxOfRateLimiter(new ItemExponentialFailureRateLimiter(5, 60_000), new BucketRateLimiter(1, 2, clock));
    expect(limiter.when('a')).toBe(5);
    expect(limiter.when('a')).toBe(10);
    expect(limiter.when('b')).toBe(1000); // bucket empty: 1 token per second
    expect(limiter.numRequeues('a')).toBe(2);
    limiter.forget('a');
    expect(limiter.numRequeues('a')).toBe(0);
  });

  it('default controller limiter caps at the configured maximum', () => {
    const limiter = defaultControllerRateLimiter({ maxDelayMs: 2000, clock: new FakeClock() });
    const delays = Array.from({ length: 20 }, () => limiter.when('k'));
    expect(Math.max(...delays)).toBe(2000);
    expect(delays[0]).toBe(5);
  });
});
