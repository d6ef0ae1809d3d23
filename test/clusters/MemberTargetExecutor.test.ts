import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemberTargetExecutor } from '../../src/clusters/MemberTargetExecutor.js';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventType, type StoredEvent } from '../../src/domain/events.js';
import { type AdmittedTarget, clusterOf, type RolloutDriver } from '../../src/domain/ports.js';
import type { Rollout, RolloutTarget } from '../../src/domain/RolloutService.js';
import { until } from '../helpers/until.js';

/**
 * The member target executor (docs/adr/0059-shard-leases.md): on the replica that holds a member's shard it makes the
 * writes of the member's targets that the engine (on the leader) admitted in the history only.
 */
const CLUSTER = 'edge-1';

function rollout(id: string, state: Rollout['state'] = 'PROGRESSING'): Rollout {
  return { id, kind: 'AGENT_POOL', state, fromVersion: 'a', toVersion: 'b', selector: {} } as unknown as Rollout;
}

function target(rolloutId: string, name: string, state: RolloutTarget['state'], cluster = CLUSTER): RolloutTarget {
  return {
    rolloutId,
    kind: 'AGENT_POOL',
    cluster,
    namespace: 'default',
    name,
    state,
    ordinal: 0,
    fromVersion: 'a',
    toVersion: 'b',
    admittedAt: new Date(),
  } as unknown as RolloutTarget;
}

/** A driver that records its writes; `admitGate` holds admissions until released. */
function recordingDriver() {
  const calls: string[] = [];
  let release: () => void = () => {};
  const gate = { held: false, wait: Promise.resolve() };
  const driver: RolloutDriver = {
    kind: 'AGENT_POOL',
    rollbackRules: async () => ({}) as never,
    prepare: async (r) => void calls.push(`prepare ${r.id}`),
    admit: async (t: AdmittedTarget, r) => {
      calls.push(`admit ${r.id} ${t.cluster}/${t.name}`);
      if (gate.held) await gate.wait;
    },
    observe: async () => ({ phase: 'progressing' }),
    finish: async (r) => void calls.push(`finish ${r.id}`),
  };
  return {
    driver,
    calls,
    hold: () => {
      gate.held = true;
      gate.wait = new Promise<void>((resolve) => {
        release = resolve;
      });
    },
    release: () => release(),
  };
}

function history(rollouts: Rollout[], targets: RolloutTarget[]) {
  return {
    get: async (id: string) => rollouts.find((r) => r.id === id),
    // One page holds them all here; the cluster filter is the store's (contract-tested on both stores).
    targets: async (id: string, state: string | undefined, _first: number | undefined, _after: string | undefined, only?: { clusters?: readonly string[] }) => {
      const clusters = only?.clusters;
      const items = targets.filter((t) => t.rolloutId === id && (!state || t.state === state) && (!clusters || clusters.includes(clusterOf(t))));
      return { items, hasNextPage: false, endCursor: null, totalCount: items.length };
    },
    activeRolloutIdsInCluster: async (cluster: string) =>
      rollouts
        .filter((r) => ['PENDING', 'PROGRESSING', 'PAUSED'].includes(r.state) && targets.some((t) => t.rolloutId === r.id && t.cluster === cluster))
        .map((r) => r.id),
    list: async () => ({ items: rollouts }) as never,
    // As the store: only targets still PROGRESSING in the cluster (all, or the one named) get the note.
    noteWaiting: async (id: string, cluster: string, target: { namespace: string; name: string } | undefined, error: string | null) => {
      for (const t of targets) {
        if (t.rolloutId !== id || clusterOf(t) !== cluster || t.state !== 'PROGRESSING') continue;
        if (target && (t.namespace !== target.namespace || t.name !== target.name)) continue;
        t.error = error;
      }
    },
  };
}

let eventId = 0;
function event(
  type: EventType,
  rolloutId: string,
  payload: Record<string, unknown>,
  name: string | null = null,
  cluster: string | null = CLUSTER,
): StoredEvent {
  return { id: ++eventId, type, rolloutId, kind: 'AGENT_POOL', namespace: name ? 'default' : null, name, cluster, payload, createdAt: new Date() };
}

function executor(rollouts: Rollout[], targets: RolloutTarget[], driver: RolloutDriver, bus = new InProcessEventBus(), writeRetryMs?: number) {
  return new MemberTargetExecutor({
    ...(writeRetryMs === undefined ? {} : { writeRetryMs }),
    cluster: CLUSTER,
    drivers: new Map([['AGENT_POOL', driver]]),
    rollouts: history(rollouts, targets),
    bus,
    logger: pino({ level: 'silent' }),
  });
}

describe('MemberTargetExecutor', () => {
  it("writes, when it starts, the PROGRESSING targets of its cluster's active rollouts: prepare once per rollout, then each admission", async () => {
    const { driver, calls } = recordingDriver();
    const rollouts = [rollout('r1'), rollout('r2', 'SUCCEEDED')];
    const targets = [
      target('r1', 'net-1', 'PROGRESSING'),
      target('r1', 'net-2', 'PROGRESSING'),
      target('r1', 'net-3', 'PENDING'),
      target('r1', 'net-4', 'PROGRESSING', 'edge-2'),
      target('r2', 'net-5', 'PROGRESSING'),
    ];
    const run = executor(rollouts, targets, driver);
    run.start();
    await until('both admissions', () => calls.length === 3);
    expect(calls).toEqual(['prepare r1', 'admit r1 edge-1/net-1', 'admit r1 edge-1/net-2']);
    // A resync admits nothing again (the kinds' writes are idempotent, but there is no need).
    run.resync();
    await run.stop();
    expect(calls).toHaveLength(3);
  });

  it("notes on its waiting targets' rows why they wait while a write fails, and clears it once one goes through (attack 17, L2)", async () => {
    const { driver } = recordingDriver();
    let refuse = true;
    driver.prepare = async () => {
      if (refuse) throw new Error('injected 403');
    };
    const rollouts = [rollout('r1')];
    const targets = [target('r1', 'net-1', 'PROGRESSING'), target('r1', 'net-2', 'SUCCEEDED'), target('r1', 'net-3', 'PROGRESSING', 'edge-2')];
    const run = executor(rollouts, targets, driver);
    run.start();
    await until('the refused prepare noted', () => targets[0]!.error);
    expect(targets[0]!.error).toMatch(/^waiting: rollplane's last write here failed at \d{4}-[^ ]+Z: injected 403$/);
    // Only its cluster's targets still in flight.
    expect(targets[1]!.error).toBeUndefined();
    expect(targets[2]!.error).toBeUndefined();
    refuse = false;
    run.resync();
    await until('cleared once the write went through', () => targets[0]!.error === null);
    await run.stop();
  });

  // Attack 21, F4: a member's failed write waited for the engine's next pass of its rollout (15–30 s); `local`'s is
  // tried again at the next pass, every few seconds. The executor now asks for its own resync.
  it('tries a failed admission again by itself, without an engine pass or a resync from outside', async () => {
    const { driver, calls } = recordingDriver();
    let failures = 2;
    const admit = driver.admit.bind(driver);
    driver.admit = async (t, r, signal) => {
      await admit(t, r, signal);
      if (failures-- > 0) throw new Error('injected: the answer was lost');
    };
    const rollouts = [rollout('r1')];
    const targets = [target('r1', 'net-1', 'PROGRESSING')];
    const run = executor(rollouts, targets, driver, new InProcessEventBus(), 10);
    run.start();
    await until('admitted a third time, after two failures', () => calls.filter((c) => c === 'admit r1 edge-1/net-1').length === 3);
    await until('the failure note cleared', () => targets[0]!.error === null);
    await run.stop();
    expect(calls.filter((c) => c.startsWith('admit'))).toHaveLength(3);
  });

  it('hears admissions on the bus, once each, also when this replica admitted it in-process first', async () => {
    const { driver, calls } = recordingDriver();
    const bus = new InProcessEventBus();
    const r1 = rollout('r1');
    const targets = [target('r1', 'net-1', 'PENDING'), target('r1', 'net-2', 'PENDING')];
    const run = executor([r1], targets, driver, bus);
    run.start();
    // In-process (the engine's replica holds the shard), then its event.
    targets[0]!.state = 'PROGRESSING';
    await run.admit({ ...targets[0]!, rolloutId: 'r1', admittedAt: new Date() } as AdmittedTarget, r1, AbortSignal.timeout(10_000));
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PENDING', to: 'PROGRESSING', error: null }, 'net-1'));
    // Only the history row (another replica's engine): the event is the only news of it.
    targets[1]!.state = 'PROGRESSING';
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PENDING', to: 'PROGRESSING', error: null }, 'net-2'));
    // Another cluster's admission is not this executor's.
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PENDING', to: 'PROGRESSING', error: null }, 'net-9', 'edge-2'));
    await until('net-2 admitted', () => calls.includes('admit r1 edge-1/net-2'));
    await run.stop();
    expect(calls).toEqual(['prepare r1', 'admit r1 edge-1/net-1', 'admit r1 edge-1/net-2']);
  });

  it('finishes a rollout in its cluster once it is terminal and none of its targets there is in flight, once', async () => {
    const { driver, calls } = recordingDriver();
    const bus = new InProcessEventBus();
    const r1 = rollout('r1');
    const targets = [target('r1', 'net-1', 'SUCCEEDED'), target('r1', 'net-2', 'PROGRESSING')];
    const run = executor([r1], targets, driver, bus);
    run.start();
    await until('the start scan', () => calls.includes('admit r1 edge-1/net-2'));
    // Aborted while net-2 is still in flight: no finish yet.
    r1.state = 'ABORTED';
    bus.publish(event(EventType.RolloutStateChanged, 'r1', { from: 'PROGRESSING', to: 'ABORTED' }, null, null));
    // Its last target there ends: now.
    targets[1]!.state = 'SUCCEEDED';
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PROGRESSING', to: 'SUCCEEDED', error: null }, 'net-2'));
    await until('finish', () => calls.includes('finish r1'));
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PROGRESSING', to: 'SUCCEEDED', error: null }, 'net-2'));
    await run.stop();
    expect(calls.filter((c) => c.startsWith('finish'))).toEqual(['finish r1']);
  });

  it("makes a second caller of a finish under way wait for it (attack 25, F1: the engine's returned at once)", async () => {
    let release: () => void = () => {};
    const finishing = new Promise<void>((resolve) => {
      release = resolve;
    });
    let finishes = 0;
    const { driver } = recordingDriver();
    driver.finish = async () => {
      finishes++;
      await finishing;
    };
    const r1 = rollout('r1', 'FAILED');
    const run = executor([r1], [target('r1', 'net-1', 'FAILED')], driver);
    const first = run.finish(r1, AbortSignal.timeout(10_000), []);
    let secondDone = false;
    const second = run.finish(r1, AbortSignal.timeout(10_000), []).then(() => {
      secondDone = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(secondDone).toBe(false);
    release();
    await Promise.all([first, second]);
    expect(secondDone).toBe(true);
    expect(finishes).toBe(1);
    // Done: a later caller returns at once, with no second finish.
    await run.finish(r1, AbortSignal.timeout(10_000), []);
    expect(finishes).toBe(1);
  });

  it('stops the writes of a rollout heard ending: a prepare under way is aborted and nothing is admitted after it', async () => {
    const calls: string[] = [];
    let prepareSignal: AbortSignal | undefined;
    const driver: RolloutDriver = {
      kind: 'AGENT_POOL',
      rollbackRules: async () => ({}) as never,
      // Waits as prepare waits for the controller's own rolling update, until told to stop.
      prepare: (r, signal) =>
        new Promise<void>((_resolve, reject) => {
          calls.push(`prepare ${r.id}`);
          prepareSignal = signal;
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      admit: async (t: AdmittedTarget, r) => void calls.push(`admit ${r.id} ${t.cluster}/${t.name}`),
      observe: async () => ({ phase: 'progressing' }),
      finish: async (r) => void calls.push(`finish ${r.id}`),
    };
    const bus = new InProcessEventBus();
    const r1 = rollout('r1');
    const targets = [target('r1', 'net-1', 'PROGRESSING')];
    const run = executor([r1], targets, driver, bus);
    run.start();
    await until('the prepare under way', () => prepareSignal !== undefined);
    r1.state = 'FAILED';
    bus.publish(event(EventType.RolloutStateChanged, 'r1', { from: 'PROGRESSING', to: 'FAILED' }, null, null));
    expect(prepareSignal!.aborted).toBe(true);
    expect(String(prepareSignal!.reason)).toMatch(/rollout r1 is FAILED: no more writes for it/);
    // Its target ends (the engine records it): the rollout's finish runs here, and still nothing was admitted.
    targets[0]!.state = 'FAILED';
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PROGRESSING', to: 'FAILED', error: 'x' }, 'net-1'));
    await until('finish', () => calls.includes('finish r1'));
    run.resync();
    await run.stop();
    expect(calls).toEqual(['prepare r1', 'finish r1']);
  });

  it('stops hearing and waits for the write under way (the shard is being given up: nothing may follow)', async () => {
    const recording = recordingDriver();
    const bus = new InProcessEventBus();
    const r1 = rollout('r1');
    const targets = [target('r1', 'net-1', 'PROGRESSING'), target('r1', 'net-2', 'PENDING')];
    const run = executor([r1], targets, recording.driver, bus);
    recording.hold();
    run.start();
    await until('the admission under way', () => recording.calls.includes('admit r1 edge-1/net-1'));
    let stopped = false;
    const stopping = run.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    recording.release();
    await stopping;
    targets[1]!.state = 'PROGRESSING';
    bus.publish(event(EventType.TargetStateChanged, 'r1', { from: 'PENDING', to: 'PROGRESSING', error: null }, 'net-2'));
    expect(recording.calls).toEqual(['prepare r1', 'admit r1 edge-1/net-1']);
    expect(run.running).toBe(false);
  });
});
