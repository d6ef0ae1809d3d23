import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PRESENCE_LABEL, ShardLeases, type ShardLeasesOptions, shardLeaseName, shardOf } from '../../src/clusters/ShardLeases.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import pino from 'pino';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { until } from '../helpers/until.js';

/** The member clusters' shard Leases against the simulator's Lease API (docs/adr/0059-shard-leases.md). */
const SHARDS = 4;
const LEASE_MS = 3000;
const RENEW_MS = 2000;
const RETRY_MS = 100;

let sim: Simulator;
let kube: KubeClients;
const running: ShardLeases[] = [];

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
});

afterEach(async () => {
  for (const shards of running.splice(0)) await shards.stop();
  await sim.stop();
});

/**
 * Who holds which shard, as the callbacks say: a replica's hold begins at onAcquired and ends once its onReleased has
 * resolved (its controllers stopped). `overlaps` lists every acquisition made while another replica still held the shard.
 */
class Holdings {
  readonly holders = new Map<number, Set<string>>();
  readonly overlaps: string[] = [];
  readonly acquired: { id: string; shard: number }[] = [];
  readonly released: { id: string; shard: number }[] = [];
  acquire(id: string, shard: number): void {
    const set = this.holders.get(shard) ?? new Set<string>();
    this.holders.set(shard, set);
    if (set.size > 0) this.overlaps.push(`${id} took shard ${shard} while ${[...set].join(',')} held it`);
    set.add(id);
    this.acquired.push({ id, shard });
  }
  release(id: string, shard: number): void {
    this.holders.get(shard)?.delete(id);
    this.released.push({ id, shard });
  }
}

function replica(id: string, holdings: Holdings, extra: Partial<ShardLeasesOptions> = {}): ShardLeases {
  const shards = new ShardLeases({
    coordination: kube.coordination,
    namespace: 'default',
    name: 'rollplane-controller',
    shards: SHARDS,
    identity: id,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    onAcquired: (shard) => holdings.acquire(id, shard),
    onReleased: async (shard) => holdings.release(id, shard),
    logger: pino({ level: 'silent' }),
    ...extra,
  });
  running.push(shards);
  return shards;
}

/** A Lease API that stops answering (as a replica whose process was stopped: nothing it sends arrives) once `cut.on`. */
function cuttable(cut: { on: boolean }): KubeClients['coordination'] {
  return new Proxy(kube.coordination, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => (cut.on ? Promise.reject(new Error('cut off')) : value.apply(target, args));
    },
  });
}

const heldBy = (shards: ShardLeases) => shards.heldShards().length;

describe('ShardLeases', () => {
  it('spreads the shards over two replicas started together, each shard held by one at a time, and says so in a gauge', async () => {
    const holdings = new Holdings();
    const registry = new Registry();
    const a = replica('a', holdings, { registry });
    const b = replica('b', holdings);
    a.start();
    b.start();
    await until('both replicas to hold half the shards', () => heldBy(a) === SHARDS / 2 && heldBy(b) === SHARDS / 2, { timeoutMs: 30_000 });
    expect(new Set([...a.heldShards(), ...b.heldShards()]).size).toBe(SHARDS);
    expect(holdings.overlaps).toEqual([]);
    expect(a.liveReplicas()).toBe(2);
    // The Leases say the same: each shard's holder is the replica that says it holds it.
    for (let n = 0; n < SHARDS; n++) {
      const lease = await kube.coordination.readNamespacedLease({ name: shardLeaseName('rollplane-controller', n), namespace: 'default' });
      expect(lease.spec?.holderIdentity).toBe(a.holds(n) ? 'a' : 'b');
    }
    const gauge = (await registry.getSingleMetricAsString('rollplane_shard_held')).split('\n').filter((l) => /^rollplane_shard_held\{/.test(l));
    expect(gauge.sort()).toEqual(Array.from({ length: SHARDS }, (_, n) => `rollplane_shard_held{shard="${n}"} ${a.holds(n) ? 1 : 0}`).sort());
  });

  it('gives back shards to a replica that joins, releasing each before the other takes it', async () => {
    const holdings = new Holdings();
    const a = replica('a', holdings);
    a.start();
    await until('a to hold every shard', () => heldBy(a) === SHARDS, { timeoutMs: 30_000 });
    const b = replica('b', holdings);
    b.start();
    await until('the shards to be spread', () => heldBy(a) === SHARDS / 2 && heldBy(b) === SHARDS / 2, { timeoutMs: 30_000 });
    expect(holdings.overlaps).toEqual([]);
    // Each shard b took was released by a first (the release resolved before b's acquisition).
    for (const { shard } of holdings.acquired.filter((x) => x.id === 'b')) {
      expect(holdings.released.some((x) => x.id === 'a' && x.shard === shard)).toBe(true);
    }
  });

  it("takes a silent replica's shards over once their Leases expire, after it stopped its work for them", async () => {
    const holdings = new Holdings();
    const cut = { on: false };
    const a = replica('a', holdings, { coordination: cuttable(cut) });
    const b = replica('b', holdings);
    a.start();
    b.start();
    await until('the shards to be spread', () => heldBy(a) === SHARDS / 2 && heldBy(b) === SHARDS / 2, { timeoutMs: 30_000 });
    const lost = a.heldShards();
    cut.on = true;
    await until('b to hold every shard', () => heldBy(b) === SHARDS, { timeoutMs: 30_000 });
    // a stepped down at its renew deadline (its work stopped) before b could take the shard: never two holders.
    expect(holdings.overlaps).toEqual([]);
    for (const shard of lost) expect(holdings.released.some((x) => x.id === 'a' && x.shard === shard)).toBe(true);
    expect(a.heldShards()).toEqual([]);
    expect(b.liveReplicas()).toBe(1);
  });

  it("keeps a shard taken again while its last hold's work was still stopping", async () => {
    const holdings = new Holdings();
    const cut = { on: false };
    let finishStopping: () => void = () => {};
    const stopping = new Promise<void>((resolve) => {
      finishStopping = resolve;
    });
    const a = replica('a', holdings, {
      shards: 1,
      coordination: cuttable(cut),
      onReleased: async (shard) => {
        holdings.release('a', shard);
        await stopping;
      },
    });
    a.start();
    await until('a to hold the shard', () => a.holds(0), { timeoutMs: 30_000 });
    // Its renewals fail: it steps down at the renew deadline, and its work starts stopping (slowly).
    cut.on = true;
    await until('a to step down', () => holdings.released.length === 1, { timeoutMs: 30_000 });
    expect(a.holds(0)).toBe(false);
    // Back before the work has stopped: it takes the Lease again (nobody else held it).
    cut.on = false;
    await until('a to take the shard again', () => holdings.acquired.length === 2 && a.holds(0), { timeoutMs: 30_000 });
    // The old hold's work is done now: that must not end the new hold.
    finishStopping();
    await stopping;
    await new Promise((resolve) => setImmediate(resolve));
    expect(a.holds(0)).toBe(true);
    expect(a.heldShards()).toEqual([0]);
  });

  it('keeps each replica to its presence Lease, removed when it stops', async () => {
    const holdings = new Holdings();
    const a = replica('a', holdings);
    a.start();
    await until('a to hold every shard', () => heldBy(a) === SHARDS, { timeoutMs: 30_000 });
    const presences = async () =>
      (await kube.coordination.listNamespacedLease({ namespace: 'default', labelSelector: `${PRESENCE_LABEL}=rollplane-controller` })).items.map(
        (l) => l.spec?.holderIdentity,
      );
    expect(await presences()).toEqual(['a']);
    await a.stop();
    expect(await presences()).toEqual([]);
    expect(holdings.released.map((x) => x.shard).sort()).toEqual([0, 1, 2, 3]);
    // Released on stop: the next replica need not wait for expiry.
    const lease = await kube.coordination.readNamespacedLease({ name: shardLeaseName('rollplane-controller', 0), namespace: 'default' });
    expect(lease.spec?.holderIdentity).toBe('');
  });
});

describe('shardOf', () => {
  it('is a stable hash of the name, spread over the shards', () => {
    expect(shardOf('edge-1', 8)).toBe(shardOf('edge-1', 8));
    const names = Array.from({ length: 20 }, (_, i) => `m-${i + 1}`);
    const used = new Set(names.map((name) => shardOf(name, 8)));
    expect(used.size).toBeGreaterThan(4);
    for (const name of names) expect(shardOf(name, 8)).toBeLessThan(8);
  });
});
