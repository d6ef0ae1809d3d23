import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Controller, type Reconciler, type Request, type Result, TerminalError } from '../../src/controller/Controller.js';
import { FakeClock, flushMicrotasks } from '../../src/util/FakeClock.js';
import { defaultControllerRateLimiter } from '../../src/controller/rateLimiters.js';
import { NotFoundError } from '../../src/errors.js';

type Behaviour = (request: Request, call: number, signal: AbortSignal) => Promise<Result | void> | Result | void;

/** A reconciler whose behaviour per call is scripted by the test; records every call. */
function scripted(behaviour: Behaviour): Reconciler & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async reconcile(request, signal) {
      calls.push(request.namespace ? `${request.namespace}/${request.name}` : request.name);
      return behaviour(request, calls.length, signal);
    },
  };
}

function newController(reconciler: Reconciler, clock: FakeClock, registry = new Registry(), workers = 1): Controller {
  return new Controller({
    name: 'widgets',
    reconciler,
    workers,
    clock,
    registry,
    newRateLimiter: () => defaultControllerRateLimiter({ clock, maxDelayMs: 1000 }),
  });
}

async function metric(registry: Registry, line: string): Promise<number> {
  const text = await registry.metrics();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : NaN;
}

describe('Controller', () => {
  it('passes namespace and name and forgets the key on success', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = scripted(() => undefined);
    const c = newController(r, clock, registry);
    c.start();
    c.enqueue({ namespace: 'ns', name: 'a' });
    c.enqueue('cluster-scoped');
    await flushMicrotasks();
    expect(r.calls).toEqual(['ns/a', 'cluster-scoped']);
    expect(await metric(registry, 'controller_runtime_reconcile_total{controller="widgets",result="success"}')).toBe(2);
    expect(c.snapshot()).toMatchObject({ depth: 0, inFlight: [], retries: {}, lastErrors: {} });
    await c.stop();
  });

  it.each([
    ['an Error', () => Promise.reject(new Error('boom')), 'boom'],
    ['a string', () => Promise.reject('just a string'), 'just a string'],
    ['undefined', () => Promise.reject(undefined), 'undefined was thrown'],
    ['a plain object', () => Promise.reject({ reason: 'x' }), 'non-Error thrown: {"reason":"x"}'],
    [
      'a synchronous throw',
      () => {
        throw new Error('sync');
      },
      'sync',
    ],
  ])('retries with backoff when the reconciler throws %s', async (_label, fail, message) => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = scripted((_req, call) => (call <= 3 ? fail() : undefined));
    const c = newController(r, clock, registry);
    c.start();
    c.enqueue('k');
    await flushMicrotasks();
    expect(r.calls).toHaveLength(1);
    expect(c.snapshot().retries).toEqual({ k: 1 });
    expect(c.snapshot().lastErrors.k).toMatchObject({ message, terminal: false });
    await clock.advance(4);
    expect(r.calls).toHaveLength(1);
    await clock.advance(1); // 5 ms
    expect(r.calls).toHaveLength(2);
    await clock.advance(10); // 10 ms
    expect(r.calls).toHaveLength(3);
    await clock.advance(20); // 20 ms, then success
    expect(r.calls).toHaveLength(4);
    expect(c.snapshot().retries).toEqual({});
    expect(c.snapshot().lastErrors).toEqual({});
    expect(await metric(registry, 'controller_runtime_reconcile_errors_total{controller="widgets"}')).toBe(3);
    expect(await metric(registry, 'controller_runtime_reconcile_total{controller="widgets",result="error"}')).toBe(3);
    expect(await metric(registry, 'workqueue_retries_total{name="widgets"}')).toBe(3);
    await c.stop();
  });

  it('records a TerminalError and never retries it', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = scripted(() => {
      throw new TerminalError('spec is invalid');
    });
    const c = newController(r, clock, registry);
    c.start();
    c.enqueue('k');
    await clock.advance(120_000);
    expect(r.calls).toEqual(['k']);
    expect(c.snapshot().lastErrors.k).toMatchObject({ message: 'spec is invalid', terminal: true });
    expect(c.snapshot().retries).toEqual({});
    expect(await metric(registry, 'controller_runtime_terminal_reconcile_errors_total{controller="widgets"}')).toBe(1);
    expect(await metric(registry, 'controller_runtime_reconcile_errors_total{controller="widgets"}')).toBe(1);
    // a new event still reconciles it
    c.enqueue('k');
    await flushMicrotasks();
    expect(r.calls).toEqual(['k', 'k']);
    await c.stop();
  });

  it('treats an error whose cause is a TerminalError as terminal', async () => {
    const clock = new FakeClock();
    const r = scripted(() => {
      throw new Error('outer', { cause: TerminalError.wrap(new NotFoundError('gone')) });
    });
    const c = newController(r, clock);
    c.start();
    c.enqueue('k');
    await clock.advance(10_000);
    expect(r.calls).toEqual(['k']);
    expect(c.snapshot().lastErrors.k?.terminal).toBe(true);
    await c.stop();
  });

  it('requeueAfter forgets the backoff and reconciles again after exactly that delay', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = scripted((_req, call) => {
      if (call === 1) throw new Error('first fails');
      if (call === 2) return { requeueAfterMs: 30_000 };
      return undefined;
    });
    const c = newController(r, clock, registry);
    c.start();
    c.enqueue('k');
    await clock.advance(5);
    expect(r.calls).toHaveLength(2);
    expect(c.snapshot().retries).toEqual({});
    expect(c.snapshot().delayed).toBe(1);
    await clock.advance(29_999);
    expect(r.calls).toHaveLength(2);
    await clock.advance(1);
    expect(r.calls).toHaveLength(3);
    expect(await metric(registry, 'controller_runtime_reconcile_total{controller="widgets",result="requeue_after"}')).toBe(1);
    await c.stop();
  });

  it('requeue: true retries through the rate limiter without counting an error', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const r = scripted((_req, call) => (call === 1 ? { requeue: true } : undefined));
    const c = newController(r, clock, registry);
    c.start();
    c.enqueue('k');
    await clock.advance(5);
    expect(r.calls).toHaveLength(2);
    expect(await metric(registry, 'controller_runtime_reconcile_errors_total{controller="widgets"}')).toBe(0);
    expect(await metric(registry, 'controller_runtime_reconcile_total{controller="widgets",result="requeue"}')).toBe(1);
    await c.stop();
  });

  it('runs N workers in parallel but never one key twice at once, and reconciles a key changed in flight again', async () => {
    const clock = new FakeClock();
    const running = new Set<string>();
    let maxParallel = 0;
    let overlap = false;
    const gates: Array<() => void> = [];
    const r = scripted(async (req) => {
      if (running.has(req.name)) overlap = true;
      running.add(req.name);
      maxParallel = Math.max(maxParallel, running.size);
      await new Promise<void>((resolve) => gates.push(resolve));
      running.delete(req.name);
    });
    const c = newController(r, clock, new Registry(), 3);
    c.start();
    for (const k of ['a', 'b', 'c', 'd']) c.enqueue(k);
    await flushMicrotasks();
    expect(running.size).toBe(3);
    expect(c.snapshot().inFlight.sort()).toEqual(['a', 'b', 'c']);
    c.enqueue('a'); // changed while in flight
    for (let i = 0; i < 20 && (gates.length > 0 || running.size > 0 || c.snapshot().depth > 0); i++) {
      for (const g of gates.splice(0)) g();
      await flushMicrotasks();
    }
    expect(overlap).toBe(false);
    expect(maxParallel).toBe(3);
    expect(r.calls.filter((k) => k === 'a')).toHaveLength(2);
    expect(r.calls).toHaveLength(5);
    await c.stop();
  });

  it('stop aborts the signal of in-flight reconciles and waits for them', async () => {
    const clock = new FakeClock();
    let sawAbort = false;
    let finished = false;
    const r = scripted(async (_req, _call, signal) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      sawAbort = signal.aborted;
      await flushMicrotasks(3);
      finished = true;
    });
    const c = newController(r, clock);
    c.start();
    c.enqueue('k');
    await flushMicrotasks();
    expect(c.snapshot().inFlight).toEqual(['k']);
    await c.stop();
    expect(sawAbort).toBe(true);
    expect(finished).toBe(true);
    expect(c.running).toBe(false);
    c.enqueue('ignored');
    expect(r.calls).toEqual(['k']);
  });

  it('restarted while the last run still drains, waits for it before handing out keys', async () => {
    const clock = new FakeClock();
    let running = 0;
    let overlap = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const r = scripted(async (_req, call) => {
      running++;
      if (running > 1) overlap = true;
      if (call === 1) await gate; // ignores its abort signal
      running--;
    });
    const c = newController(r, clock);
    c.start();
    c.enqueue('k');
    await flushMicrotasks();
    let stopped = false;
    const stopping = c.stop().then(() => (stopped = true));
    c.start(); // leadership regained at once
    c.enqueue('k');
    await flushMicrotasks();
    expect(stopped).toBe(false);
    expect(r.calls).toHaveLength(1);
    expect(c.snapshot().depth).toBe(1);
    release();
    await stopping;
    await flushMicrotasks();
    expect(r.calls).toHaveLength(2);
    expect(overlap).toBe(false);
    await c.stop();
  });

  it('resyncs its sources on every start', async () => {
    const clock = new FakeClock();
    const r = scripted(() => undefined);
    const c = newController(r, clock);
    c.watch({ resync: (enqueue) => ['x', 'y'].forEach(enqueue) });
    c.start();
    await flushMicrotasks();
    await c.stop();
    c.start();
    await flushMicrotasks();
    expect(r.calls).toEqual(['x', 'y', 'x', 'y']);
    await c.stop();
  });
});

describe('Controller.resync', () => {
  it('runs every key its sources list at once, also one waiting out a back-off, and then forgets its failures', async () => {
    const clock = new FakeClock();
    let down = true;
    const r = scripted(() => {
      if (down) throw new Error('database unreachable');
    });
    const c = newController(r, clock);
    c.watch({ resync: (enqueue) => ['a', 'b'].forEach(enqueue) });
    c.start();
    await flushMicrotasks();
    expect(r.calls).toEqual(['a', 'b']);
    // Both failed and wait for their back-off; nothing runs without time passing.
    await flushMicrotasks();
    expect(r.calls).toEqual(['a', 'b']);
    expect(c.snapshot().retries).toEqual({ a: 1, b: 1 });
    down = false;
    c.resync();
    await flushMicrotasks();
    expect(r.calls).toEqual(['a', 'b', 'a', 'b']);
    expect(c.snapshot().retries).toEqual({});
    await c.stop();
    c.resync(); // stopped: ignored
    await flushMicrotasks();
    expect(r.calls).toHaveLength(4);
  });
});
