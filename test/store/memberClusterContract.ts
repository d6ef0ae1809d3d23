import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemberClusterRegistry } from '../../src/domain/clusters/MemberClusterRegistry.js';
import type { MemberClusterStore } from '../../src/domain/clusters/MemberClusterStore.js';
import type { ClusterRegistration } from '../../src/domain/clusters/model.js';

/**
 * The member cluster registry's store contract (domain/clusters/MemberClusterStore.ts) and the registry over it, run
 * against every store. `open` gives a store on a fresh, migrated database; `connect` another replica's on the same one.
 */
export interface MemberClusterStoreFactory {
  open(): Promise<{ store: MemberClusterStore; close(): Promise<void> }>;
  connect(): Promise<{ store: MemberClusterStore; close(): Promise<void> }>;
}

const T0 = new Date('2026-12-07T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

function secret(name: string, labels: Record<string, string> = {}, sourceRef = `rollplane-system/${name}`): ClusterRegistration {
  return { name, labels, source: 'SECRET', sourceRef };
}

export function memberClusterContract(factory: () => MemberClusterStoreFactory): void {
  let store: MemberClusterStore;
  let other: MemberClusterStore;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    const f = factory();
    const opened = await f.open();
    store = opened.store;
    closers.push(() => opened.close());
    const connected = await f.connect();
    other = connected.store;
    closers.push(() => connected.close());
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('registers local once, keeps its labels, and lists it', async () => {
    let now = at(0);
    const registry = new MemberClusterRegistry(store, () => now);
    expect(await registry.ensureLocal()).toBe(true);
    now = at(1);
    expect(await new MemberClusterRegistry(other, () => now).ensureLocal()).toBe(false);
    const [local] = await store.list();
    expect(local).toMatchObject({ name: 'local', source: 'LOCAL', sourceRef: '', labels: {}, createdAt: T0, updatedAt: T0 });
    expect(local!.health).toEqual({ state: 'CONNECTING', since: T0, message: null, serverVersion: null, kinds: [] });
  });

  it('puts a registration: created, unchanged, relabelled, and taken when another source holds the name', async () => {
    expect((await store.put(secret('edge-1', { env: 'prod', region: 'eu' }), at(10))).outcome).toBe('created');
    // Labels compare by value, whatever their order.
    expect((await other.put(secret('edge-1', { region: 'eu', env: 'prod' }), at(11))).outcome).toBe('unchanged');
    const relabelled = await store.put(secret('edge-1', { env: 'staging' }), at(12));
    expect(relabelled).toMatchObject({ outcome: 'updated', record: { labels: { env: 'staging' }, createdAt: at(10), updatedAt: at(12) } });
    const taken = await store.put({ name: 'edge-1', labels: {}, source: 'CAPI', sourceRef: 'fleet/edge-1-kubeconfig' }, at(13));
    expect(taken).toMatchObject({ outcome: 'taken', record: { source: 'SECRET', labels: { env: 'staging' } } });
    expect(await store.remove('edge-1', 'CAPI')).toBe(false);
    expect((await store.find('edge-1'))?.source).toBe('SECRET');
  });

  it('records health without touching the registration, and reads it from another connection', async () => {
    await store.put(secret('edge-2'), at(20));
    const health = {
      state: 'UNREACHABLE' as const,
      since: at(21),
      message: 'ECONNREFUSED',
      serverVersion: 'v1.31.0',
      kinds: ['NODE_AGENT' as const, 'AGENT_POOL' as const],
    };
    expect(await store.recordHealth('edge-2', health)).toBe(true);
    expect(await store.recordHealth('no-such-cluster', health)).toBe(false);
    // Conditional: only while the recorded state is the one named (registration's verified answer never overwrites a probe).
    expect(await store.recordHealth('edge-2', { ...health, state: 'READY', message: null }, 'CONNECTING')).toBe(false);
    expect((await other.find('edge-2'))?.health.state).toBe('UNREACHABLE');
    expect(await store.recordHealth('edge-2', { ...health, message: 'again' }, 'UNREACHABLE')).toBe(true);
    expect((await other.find('edge-2'))?.health.message).toBe('again');
    expect(await store.recordHealth('edge-2', health)).toBe(true);
    const read = await other.find('edge-2');
    expect(read?.health).toEqual({ ...health, kinds: ['AGENT_POOL', 'NODE_AGENT'] });
    expect(read?.updatedAt).toEqual(at(20));
  });

  it('syncs a source: registers, relabels and removes its own rows, refuses bad input and names others hold, changing nothing', async () => {
    let now = at(30);
    const registry = new MemberClusterRegistry(store, () => now);
    await store.put({ name: 'capi-1', labels: {}, source: 'CAPI', sourceRef: 'fleet/capi-1-kubeconfig' }, now);
    const first = await registry.sync('SECRET', [secret('edge-1', { env: 'prod' }), secret('edge-3'), secret('capi-1')]);
    expect(first).toEqual({
      created: ['edge-3'],
      updated: ['edge-1'],
      removed: ['edge-2'],
      refused: [{ name: 'capi-1', sourceRef: 'rollplane-system/capi-1', reason: expect.stringContaining('registered by CAPI') }],
    });
    now = at(31);
    const second = await registry.sync('SECRET', [
      secret('edge-1', { 'bad key!': 'x' }),
      secret('edge-3', { tier: 'edge' }),
      secret('edge-3', { tier: 'other' }, 'rollplane-system/copy'),
      secret('local'),
      secret('Not_A_Label'),
    ]);
    expect(second.created).toEqual([]);
    expect(second.updated).toEqual(['edge-3']);
    expect(second.removed).toEqual([]);
    expect(second.refused.map((r) => r.name)).toEqual(['edge-1', 'edge-3', 'local', 'Not_A_Label']);
    expect(second.refused[0]!.reason).toContain('label key "bad key!"');
    // The refused relabelling changed nothing: edge-1 keeps its labels and stays registered.
    expect((await store.find('edge-1'))?.labels).toEqual({ env: 'prod' });
    expect((await store.find('edge-3'))?.labels).toEqual({ tier: 'edge' });
    expect((await store.list()).map((c) => `${c.name}:${c.source}`)).toEqual(['capi-1:CAPI', 'edge-1:SECRET', 'edge-3:SECRET', 'local:LOCAL']);
    // A source that finds nothing removes its own rows only; local is never a source's to remove.
    const emptied = await registry.sync('SECRET', []);
    expect(emptied.removed.sort()).toEqual(['edge-1', 'edge-3']);
    expect(await store.remove('local', 'SECRET')).toBe(false);
    expect((await store.list()).map((c) => c.name)).toEqual(['capi-1', 'local']);
  });

  it('two replicas putting the same registration at once: one row, both succeed', async () => {
    const results = await Promise.all([store.put(secret('race-1'), at(40)), other.put(secret('race-1'), at(40))]);
    expect(results.map((r) => r.outcome).sort()).toEqual(['created', 'unchanged']);
    expect((await store.list()).filter((c) => c.name === 'race-1')).toHaveLength(1);
  });
}
