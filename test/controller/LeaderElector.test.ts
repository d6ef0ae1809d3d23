import { spawn } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Controller } from '../../src/controller/Controller.js';
import { FakeClock } from '../../src/util/FakeClock.js';
import { LeaderElector, type LeaderElectorOptions, runWhileLeading } from '../../src/controller/LeaderElector.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import { Resources, SimApiError, type Simulator, startSimulator } from '../../src/sim/index.js';
import { until } from '../helpers/until.js';

const LEASE_MS = 3000;
const RENEW_MS = 2000;
const RETRY_MS = 100;

let sim: Simulator;
let kube: KubeClients;
const electors: LeaderElector[] = [];

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
});

afterEach(async () => {
  for (const e of electors.splice(0)) await e.stop();
  await sim.stop();
});

/** Counts replicas whose workers are running, as the callbacks see it, and remembers the maximum ever seen. */
class LeadershipLog {
  running = new Set<string>();
  max = 0;
  starts: Array<{ id: string; at: number }> = [];
  stops: Array<{ id: string; at: number }> = [];
  started(id: string): void {
    this.running.add(id);
    this.max = Math.max(this.max, this.running.size);
    this.starts.push({ id, at: performance.now() });
  }
  stopped(id: string): void {
    this.running.delete(id);
    this.stops.push({ id, at: performance.now() });
  }
}

function newElector(identity: string, log: LeadershipLog, extra: Partial<LeaderElectorOptions> = {}): LeaderElector {
  const e = new LeaderElector({
    coordination: kube.coordination,
    namespace: 'default',
    name: 'rollplane-workers',
    identity,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    onStartedLeading: () => log.started(identity),
    onStoppedLeading: () => log.stopped(identity),
    ...extra,
  });
  electors.push(e);
  return e;
}

/** Samples isLeader() of every elector every 2 ms; `max` is the most leaders ever seen at once. */
function watchLeaders(list: LeaderElector[]): { max: () => number; stop: () => void } {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, list.filter((e) => e.isLeader()).length);
  }, 2);
  return { max: () => max, stop: () => clearInterval(timer) };
}

/** The coordination API with every call counted in `calls.n`: how often an elector has looked at the lease. */
function counted(calls: { n: number }): KubeClients['coordination'] {
  return new Proxy(kube.coordination, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.n++;
        return value.apply(target, args);
      };
    },
  });
}

function lease() {
  return sim.store.get(Resources.leases, 'default', 'rollplane-workers');
}

describe('LeaderElector', () => {
  it('elects exactly one of two replicas and hands over on release well within the lease duration', async () => {
    const log = new LeadershipLog();
    const registries = { a: new Registry(), b: new Registry() };
    const calls = { a: { n: 0 }, b: { n: 0 } };
    const a = newElector('a', log, { registry: registries.a, coordination: counted(calls.a) });
    const b = newElector('b', log, { registry: registries.b, coordination: counted(calls.b) });
    const gauge = async (id: 'a' | 'b') => (await registries[id].metrics()).match(/rollplane_leader\{name="rollplane-workers"\} (\d)/)?.[1];
    const sampler = watchLeaders([a, b]);
    a.start();
    b.start();
    await until('a leader', () => a.isLeader() || b.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    // Both keep campaigning: the follower must not take over a lease that is being renewed, however often it tries.
    const [leader, follower] = a.isLeader() ? [a, b] : [b, a];
    const followerCalls = calls[follower.identity as 'a' | 'b'];
    const triedBefore = followerCalls.n;
    await until('the follower tried 5 more times', () => followerCalls.n >= triedBefore + 5, { timeoutMs: 10_000, intervalMs: 2 });
    expect(follower.isLeader()).toBe(false);
    expect(lease()?.spec.holderIdentity).toBe(leader.identity);
    expect(follower.observedLeader()).toBe(leader.identity);
    expect(await gauge(leader.identity as 'a' | 'b')).toBe('1');
    expect(await gauge(follower.identity as 'a' | 'b')).toBe('0');

    const released = performance.now();
    await leader.stop();
    expect(log.running.has(leader.identity)).toBe(false);
    await until('handover', () => follower.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    const handoverMs = performance.now() - released;
    expect(handoverMs).toBeLessThan(LEASE_MS);
    expect(lease()?.spec).toMatchObject({ holderIdentity: follower.identity, leaseTransitions: 1 });
    expect(await gauge(leader.identity as 'a' | 'b')).toBe('0');
    expect(await gauge(follower.identity as 'a' | 'b')).toBe('1');
    sampler.stop();
    expect(sampler.max()).toBe(1);
    expect(log.max).toBe(1);
  });

  it('runs controllers only on the leader and moves them on handover', async () => {
    const reconciledBy: string[] = [];
    const aborted: string[] = [];
    const replica = (id: string) => {
      const controller = new Controller({
        name: `widgets-${id}`,
        reconciler: {
          async reconcile(req, signal) {
            reconciledBy.push(`${id}:${req.name}`);
            // Holds the key until leadership ends, to show in-flight work is aborted.
            if (req.name === 'slow') {
              await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
              aborted.push(id);
            }
          },
        },
      });
      controller.watch({ resync: (add) => ['w1', 'slow'].forEach(add) });
      const calls = { n: 0 };
      const elector = newElector(id, new LeadershipLog(), { ...runWhileLeading([controller]), coordination: counted(calls) });
      return { controller, elector, calls };
    };
    const a = replica('a');
    const b = replica('b');
    a.elector.start();
    await until('a reconciling', () => a.controller.running && reconciledBy.length === 2, { timeoutMs: 10_000, intervalMs: 2 });
    b.elector.start();
    // b has looked at the lease three times and found a renewed one each time.
    await until('b tried 3 times', () => b.calls.n >= 3, { timeoutMs: 10_000, intervalMs: 2 });
    expect(b.controller.running).toBe(false);
    await a.elector.stop();
    expect(a.controller.running).toBe(false);
    expect(aborted).toEqual(['a']);
    await until('b reconciling', () => reconciledBy.length === 4, { timeoutMs: 10_000, intervalMs: 2 });
    expect(reconciledBy.sort()).toEqual(['a:slow', 'a:w1', 'b:slow', 'b:w1']);
    expect(a.controller.snapshot().inFlight).toEqual([]);
  });

  it('steps down at once when it finds another holder in the lease', async () => {
    const log = new LeadershipLog();
    let signal: AbortSignal | undefined;
    const a = newElector('a', log, {
      onStartedLeading: (s) => {
        signal = s;
        log.started('a');
      },
    });
    a.start();
    await until('leadership', () => a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    const current = lease()!;
    sim.store.update(Resources.leases, { ...current, spec: { ...current.spec, holderIdentity: 'intruder' } });
    await until('step down', () => !a.isLeader(), { timeoutMs: RENEW_MS, intervalMs: 2 });
    expect(signal?.aborted).toBe(true);
    expect(log.stops.map((s) => s.id)).toEqual(['a']);
  });

  it('neither keeps nor takes the lease while it cannot lead (canLead), and another replica takes over', async () => {
    const log = new LeadershipLog();
    let aCanLead = true;
    const a = newElector('a', log, { canLead: () => aCanLead });
    a.start();
    await until('a to lead', () => a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    const b = newElector('b', log);
    b.start();
    // a's database is cut off (the Kubernetes API is fine): it stops renewing, steps down at its renew deadline, and b
    // takes the lease once it expires, rather than every rollout waiting for a's database.
    aCanLead = false;
    const cutOff = performance.now();
    await until('a to step down', () => !a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    expect(performance.now() - cutOff).toBeLessThan(LEASE_MS);
    await until('b to lead', () => b.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    expect(lease()?.spec.holderIdentity).toBe('b');
    expect(log.max).toBe(1);
    // Able again, a competes again: it takes the lease when b releases it.
    aCanLead = true;
    await b.stop();
    await until('a to lead again', () => a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
  });

  it('does not take an unheld lease while it cannot lead', async () => {
    const log = new LeadershipLog();
    const a = newElector('a', log, { canLead: async () => false });
    let attempts = 0;
    const b = newElector('b', log, { onAttempt: () => attempts++ });
    a.start();
    await new Promise((resolve) => setTimeout(resolve, 10 * RETRY_MS));
    expect(a.isLeader()).toBe(false);
    expect(lease()).toBeUndefined();
    b.start();
    await until('b to lead', () => b.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    expect(attempts).toBeGreaterThan(0);
  });

  it('steps down when it cannot renew within the renew deadline', async () => {
    const log = new LeadershipLog();
    const a = newElector('a', log);
    a.start();
    await until('leadership', () => a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    let failing = 0;
    sim.api.hooks.beforeRequest = (info) => {
      if (info.resource.plural === 'leases') {
        failing++;
        throw new SimApiError(503, 'ServiceUnavailable', 'injected');
      }
    };
    const cutOff = performance.now();
    await until('step down', () => !a.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    expect(performance.now() - cutOff).toBeLessThan(LEASE_MS);
    expect(failing).toBeGreaterThan(0);
    expect(lease()?.spec.holderIdentity).toBe('a'); // it could not even release: the lease simply expires
  });

  it('takes over from a SIGKILLed leader process only after the lease expires, never leading alongside it', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(import.meta.dirname, 'fixtures/leaseHolder.ts'),
        sim.kubeconfigPath,
        'child',
        String(LEASE_MS),
        String(RENEW_MS),
        String(RETRY_MS),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('LEADING') && resolve());
        child.on('exit', (code) => reject(new Error(`child exited (${code}): ${stderr}`)));
      });
      const log = new LeadershipLog();
      let lastAttempt: { startedAt: number; acquired: boolean } | undefined;
      const b = newElector('b', log, { onAttempt: (attempt) => (lastAttempt = attempt) });
      // Had the child stopped renewing, b would take the lease at its first attempt after it has seen the same record
      // for a lease duration, counted from its first look: on or after this moment (b's clock, and wall time).
      const expiresAt = performance.now() + LEASE_MS;
      const expiresAtWall = Date.now() + LEASE_MS;
      b.start();
      // While the child lives and renews, b must never lead: wait until the child has renewed past that moment and b
      // has tried to acquire (and failed) after it.
      await until(
        () =>
          `the child to renew and b to try again after the lease would have expired (renewTime ${lease()?.spec.renewTime}, b's last attempt ${JSON.stringify(lastAttempt)})`,
        () => new Date(lease()?.spec.renewTime ?? 0).getTime() > expiresAtWall && lastAttempt !== undefined && lastAttempt.startedAt > expiresAt,
        { timeoutMs: 3 * LEASE_MS, intervalMs: 10 },
      );
      expect(lastAttempt?.acquired).toBe(false);
      expect(log.starts).toEqual([]); // every start of b's workers is logged, however short its leadership
      expect(b.isLeader()).toBe(false);
      expect(lease()?.spec.holderIdentity).toBe('child');

      const exited = new Promise((resolve) => child.on('exit', (_c, sig) => resolve(sig)));
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      // The child's last renewal (its wall clock, as written): the record b must see unchanged for a lease duration.
      const lastRenewal = new Date(lease()!.spec.renewTime).getTime();
      await until('takeover', () => b.isLeader(), { timeoutMs: 3 * LEASE_MS, intervalMs: 2 });
      const takenOver = lease()!.spec;
      expect(takenOver).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
      // b counts the lease duration from the last renewal it observed. That renewal is measured from the lease itself
      // (b's acquireTime against the child's renewTime), not from the kill: on a loaded machine the child may have
      // last renewed long before it was killed. The margin covers the requests' latency between the stamps.
      expect(new Date(takenOver.acquireTime).getTime() - lastRenewal).toBeGreaterThan(LEASE_MS - 3 * RETRY_MS * 2.2);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});

describe('LeaderElector on a fake clock (exact deadlines, real API)', () => {
  const retry = 2000;
  const renew = 10_000;
  const leaseMs = 15_000;

  function elector(identity: string, clock: FakeClock, log: LeadershipLog): LeaderElector {
    return newElector(identity, log, { clock, jitter: 0, leaseDurationMs: leaseMs, renewDeadlineMs: renew, retryPeriodMs: retry });
  }

  /** Advances to the next attempt and waits (real time) until the attempt has finished and the loop sleeps again. */
  async function nextAttempt(clock: FakeClock, timersWhenIdle: number): Promise<void> {
    await clock.advance(retry);
    await until('the attempt to finish', () => clock.pendingTimers() === timersWhenIdle, { timeoutMs: 10_000, intervalMs: 2 });
  }

  it('steps down exactly at the renew deadline counted from the last successful renewal', async () => {
    const clock = new FakeClock(0, Date.now());
    const a = elector('a', clock, new LeadershipLog());
    a.start();
    await until('leadership', () => a.isLeader() && clock.pendingTimers() === 2, { timeoutMs: 10_000, intervalMs: 2 }); // retry sleep + renew deadline
    await nextAttempt(clock, 2); // t = 2 s: renewed
    sim.api.hooks.beforeRequest = (info) => {
      if (info.resource.plural === 'leases') throw new SimApiError(503, 'ServiceUnavailable', 'injected');
    };
    for (let t = 4; t <= 10; t += 2) await nextAttempt(clock, 2); // t = 4 … 10 s: every renewal fails
    expect(clock.now()).toBe(10_000);
    expect(a.isLeader()).toBe(true); // deadline is 2 s + 10 s
    await clock.advance(retry - 1); // 11.999 s
    expect(a.isLeader()).toBe(true);
    await clock.advance(1); // 12 s
    expect(a.isLeader()).toBe(false);
  });

  it('takes over a crashed holder only once the lease has not changed for a full lease duration on its own clock', async () => {
    const log = new LeadershipLog();
    const crashedClock = new FakeClock(0, Date.now());
    const crashed = elector('crashed', crashedClock, log);
    crashed.start();
    await until('the first leader', () => crashed.isLeader(), { timeoutMs: 10_000, intervalMs: 2 });
    // crashedClock never advances again: 'crashed' never renews, as if the process died.
    const clock = new FakeClock(0, Date.now());
    const b = elector('b', clock, log);
    b.start();
    await until('b observing', () => clock.pendingTimers() === 1 && b.observedLeader() === 'crashed', { timeoutMs: 10_000, intervalMs: 2 });
    for (let t = retry; t < leaseMs; t += retry) {
      await nextAttempt(clock, 1);
      expect(b.isLeader()).toBe(false);
    }
    expect(clock.now()).toBe(14_000);
    await nextAttempt(clock, 2); // 16 s ≥ 0 + 15 s: expired
    expect(b.isLeader()).toBe(true);
    expect(lease()?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    // The old leader's renew deadline (on its own clock) passes; it must step down, not fight for the lease.
    await crashedClock.advance(renew);
    expect(crashed.isLeader()).toBe(false);
  });
});
