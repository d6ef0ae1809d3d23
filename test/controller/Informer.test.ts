import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/errors.js';
import { Controller } from '../../src/controller/Controller.js';
import { FakeClock } from '../../src/util/FakeClock.js';
import { Informer } from '../../src/controller/Informer.js';
import { resourceInformer } from '../../src/controller/resourceInformer.js';
import { enqueueByLabels, enqueueOwner, feed, generationChanged } from '../../src/controller/sources.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import { Resources, SimApiError, type Simulator, startSimulator } from '../../src/sim/index.js';
import type { KubeObject } from '../../src/sim/types.js';
import { until } from '../helpers/until.js';

let sim: Simulator;
let kube: KubeClients;
const informers: Informer<V1ConfigMap>[] = [];
const informersAny: Array<{ stop(): Promise<void> }> = [];

beforeEach(async () => {
  // A small event history so that a watch resuming from an old resourceVersion gets 410 Expired.
  sim = await startSimulator({ behaviour: false, historySize: 5 });
  kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
});

afterEach(async () => {
  for (const i of [...informers.splice(0), ...informersAny.splice(0)]) await i.stop();
  await sim.stop();
});

function configMap(name: string, data: Record<string, string>, extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', ...extra }, data };
}

function put(name: string, data: Record<string, string>): void {
  const existing = sim.store.get(Resources.configmaps, 'default', name);
  if (existing) sim.store.update(Resources.configmaps, { ...existing, data });
  else sim.store.create(Resources.configmaps, configMap(name, data));
}

function newInformer(onError?: (e: unknown) => void): { informer: Informer<V1ConfigMap>; events: string[] } {
  const informer = new Informer<V1ConfigMap>({
    name: 'configmaps',
    path: '/api/v1/namespaces/default/configmaps',
    list: (page) => kube.core.listNamespacedConfigMap({ namespace: 'default', ...page }),
    watch: kube.watch,
    initialBackoffMs: 5,
    maxBackoffMs: 50,
    indexers: { byApp: (o) => (o.metadata?.labels?.app ? [o.metadata.labels.app] : []) },
    onError,
  });
  const events: string[] = [];
  informer.addEventHandler({
    onAdd: (o) => events.push(`add ${o.metadata?.name} ${JSON.stringify(o.data)}`),
    onUpdate: (_old, o) => events.push(`update ${o.metadata?.name} ${JSON.stringify(o.data)}`),
    onDelete: (o) => events.push(`delete ${o.metadata?.name}`),
  });
  informers.push(informer);
  return { informer, events };
}

describe('Informer', () => {
  it('lists into its cache, then follows the watch', async () => {
    put('a', { v: '1' });
    const { informer, events } = newInformer();
    informer.start();
    await informer.waitForSync();
    expect(informer.hasSynced()).toBe(true);
    expect(informer.get('default', 'a')?.data).toEqual({ v: '1' });
    put('a', { v: '2' });
    sim.store.create(Resources.configmaps, configMap('b', {}, { labels: { app: 'web' } }));
    sim.store.delete(Resources.configmaps, 'default', 'a');
    await until('four events', () => events.length === 4, { timeoutMs: 5_000, intervalMs: 5 });
    expect(events).toEqual(['add a {"v":"1"}', 'update a {"v":"2"}', 'add b {}', 'delete a']);
    expect(informer.list('default').map((o) => o.metadata?.name)).toEqual(['b']);
    expect(informer.byIndex('byApp', 'web').map((o) => o.metadata?.name)).toEqual(['b']);
    expect(informer.get('default', 'a')).toBeUndefined();
  });

  it('backs off exponentially (on its clock) while the API keeps failing, up to the cap', async () => {
    const clock = new FakeClock();
    let lists = 0;
    sim.api.hooks.beforeRequest = (info) => {
      if (info.verb === 'list') {
        lists++;
        throw new SimApiError(503, 'ServiceUnavailable', 'injected');
      }
    };
    const informer = new Informer<V1ConfigMap>({
      name: 'configmaps',
      path: '/api/v1/namespaces/default/configmaps',
      list: () => kube.core.listNamespacedConfigMap({ namespace: 'default' }),
      watch: kube.watch,
      clock,
      random: () => 1, // no jitter: delays are exactly initial · 2^n
      initialBackoffMs: 100,
      maxBackoffMs: 400,
    });
    informers.push(informer);
    informer.start();
    const listsAt: number[] = [];
    await until('first failure', () => lists === 1 && clock.pendingTimers() === 1, { timeoutMs: 5_000, intervalMs: 5 });
    listsAt.push(clock.now());
    for (let t = 0; t < 1500; t += 50) {
      await clock.advance(50);
      const before = lists;
      await until('the retry to fail', () => clock.pendingTimers() === 1, { timeoutMs: 5_000, intervalMs: 5 });
      if (lists > before) listsAt.push(clock.now());
    }
    // 100, 200, 400, then capped at 400.
    expect(listsAt.slice(0, 6)).toEqual([0, 100, 300, 700, 1100, 1500]);
    expect(informer.hasSynced()).toBe(false);
  });

  it('isolates a throwing event handler from the watch and from other handlers', async () => {
    const errors: unknown[] = [];
    const { informer, events } = newInformer((e) => errors.push(e));
    informer.addEventHandler({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    informer.start();
    await informer.waitForSync();
    put('a', { v: '1' });
    put('b', { v: '1' });
    await until('both events', () => events.length === 2, { timeoutMs: 5_000, intervalMs: 5 });
    expect(errors.map((e) => (e as Error).message)).toEqual(['handler bug', 'handler bug']);
    expect(informer.stats).toMatchObject({ lists: 1, watches: 1, errors: 0 });
  });

  it('caches listed and watched objects in the same wire form', async () => {
    put('listed', { v: '1' });
    const { informer } = newInformer();
    informer.start();
    await informer.waitForSync();
    put('watched', { v: '1' });
    await until('watched', () => informer.get('default', 'watched') !== undefined, { timeoutMs: 5_000, intervalMs: 5 });
    for (const name of ['listed', 'watched']) {
      const o = informer.get('default', name)!;
      expect(o.apiVersion).toBe('v1');
      expect(o.kind).toBe('ConfigMap');
      expect(typeof o.metadata?.creationTimestamp).toBe('string');
    }
  });

  it('re-watches after the server drops its watches and misses no update', async () => {
    put('a', { v: '1' });
    const { informer, events } = newInformer();
    informer.start();
    await informer.waitForSync();
    await until('the watch', () => sim.api.watchCount() === 1, { timeoutMs: 5_000, intervalMs: 5 });
    for (let round = 2; round <= 4; round++) {
      expect(sim.api.dropWatches()).toBe(1);
      put('a', { v: String(round) }); // written while the informer is reconnecting
      await until(`v=${round}`, () => informer.get('default', 'a')?.data?.v === String(round), { timeoutMs: 5_000, intervalMs: 5 });
      await until('a new watch', () => sim.api.watchCount() === 1, { timeoutMs: 5_000, intervalMs: 5 });
    }
    expect(events).toEqual(['add a {"v":"1"}', 'update a {"v":"2"}', 'update a {"v":"3"}', 'update a {"v":"4"}']);
    expect(informer.stats.watches).toBeGreaterThanOrEqual(4);
    expect(informer.stats.lists).toBe(1);
  });

  it('relists after 410 Expired and delivers every change made meanwhile', async () => {
    put('keep', { v: '1' });
    put('gone', { v: '1' });
    const { informer, events } = newInformer();
    informer.start();
    await informer.waitForSync();
    await until('the watch', () => sim.api.watchCount() === 1, { timeoutMs: 5_000, intervalMs: 5 });
    // Hold the informer's next watch request until more than historySize writes have happened.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    sim.api.hooks.beforeRequest = async (info) => {
      if (info.verb === 'watch' && held++ === 0) await gate;
    };
    sim.api.dropWatches();
    await until('the held watch', () => held === 1, { timeoutMs: 5_000, intervalMs: 5 });
    for (let i = 2; i <= 8; i++) put('keep', { v: String(i) });
    sim.store.delete(Resources.configmaps, 'default', 'gone');
    put('new', { v: '1' });
    release();
    await until('relist', () => informer.get('default', 'new') !== undefined && informer.get('default', 'gone') === undefined, {
      timeoutMs: 5_000,
      intervalMs: 5,
    });
    expect(informer.stats.expired).toBe(1);
    expect(informer.stats.lists).toBe(2);
    expect(informer.get('default', 'keep')?.data).toEqual({ v: '8' });
    expect(events.slice(2).sort()).toEqual(['add new {"v":"1"}', 'delete gone', 'update keep {"v":"8"}']);
  });

  it('keeps retrying with backoff through list and watch errors (not just 410) and recovers', async () => {
    put('a', { v: '1' });
    let failures = 0;
    sim.api.hooks.beforeRequest = (info) => {
      if ((info.verb === 'list' || info.verb === 'watch') && failures < 6) {
        failures++;
        throw new SimApiError(failures % 2 ? 500 : 403, failures % 2 ? 'InternalError' : 'Forbidden', 'injected');
      }
    };
    const errors: unknown[] = [];
    const { informer } = newInformer((e) => errors.push(e));
    informer.start();
    await informer.waitForSync();
    put('a', { v: '2' });
    await until('recovery', () => informer.get('default', 'a')?.data?.v === '2', { timeoutMs: 5_000, intervalMs: 5 });
    expect(failures).toBe(6);
    expect(informer.stats.errors).toBe(6);
    expect(errors).toHaveLength(6);
    expect(errors.every((e) => isAppError(e))).toBe(true);
  });

  it('converges to the final state of every object under random errors and periodic watch drops', async () => {
    const { informer, events } = newInformer();
    informer.start();
    await informer.waitForSync();
    const names = ['a', 'b', 'c', 'd'];
    for (const n of names) put(n, { v: '0' });
    await until('initial objects', () => informer.list().length === 4, { timeoutMs: 5_000, intervalMs: 5 });
    sim.faults.set({ errorRate: { list: 0.3, watch: 0.3 }, dropWatchesEveryMs: 20 });
    for (let i = 1; i <= 40; i++) {
      put(names[i % names.length]!, { v: String(i) });
      if (i % 5 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    sim.store.delete(Resources.configmaps, 'default', 'd');
    await until(
      'convergence',
      () =>
        names
          .slice(0, 3)
          .every(
            (n) => informer.get('default', n)?.metadata?.resourceVersion === sim.store.get(Resources.configmaps, 'default', n)?.metadata.resourceVersion,
          ) && !informer.get('default', 'd'),
      { timeoutMs: 5_000, intervalMs: 5 },
    );
    const stats = sim.faults.stats();
    sim.faults.set({});
    expect(stats.watchDrops + stats.errors).toBeGreaterThan(0);
    // Every object's last state reached the handlers, and the deletion too.
    for (const n of names.slice(0, 3)) {
      const last = events.filter((e) => e.includes(` ${n} `)).at(-1);
      expect(last).toBe(`update ${n} ${JSON.stringify(sim.store.get(Resources.configmaps, 'default', n)?.data)}`);
    }
    expect(events.filter((e) => e.endsWith(' d') || e.includes(' d ')).at(-1)).toBe('delete d');
  });

  it('informs on a custom resource across namespaces with resourceInformer, honouring a label selector', async () => {
    for (const name of ['ns1', 'ns2']) sim.store.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const pools = resourceInformer<KubernetesObject>(kube, {
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      plural: 'ippools',
      labelSelector: 'tier=prod',
    });
    informersAny.push(pools);
    const pool = (namespace: string, name: string, tier: string): KubeObject => ({
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name, namespace, labels: { tier } },
      spec: { ipv4Config: { cidr: '10.0.0.0/24', serverIP: '10.0.0.2', pool: { start: '10.0.0.10', end: '10.0.0.250' } }, networkName: `${namespace}/net` },
    });
    sim.store.create(Resources.ippools, pool('ns1', 'a', 'prod'));
    sim.store.create(Resources.ippools, pool('ns1', 'b', 'dev'));
    pools.start();
    await pools.waitForSync();
    sim.store.create(Resources.ippools, pool('ns2', 'c', 'prod'));
    await until('c', () => pools.list().length === 2, { timeoutMs: 5_000, intervalMs: 5 });
    expect(
      pools
        .list()
        .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)
        .sort(),
    ).toEqual(['ns1/a', 'ns2/c']);
    expect(pools.list('ns2').map((p) => p.metadata?.name)).toEqual(['c']);
  });

  it('relists page by page (500 objects a page), typed and custom-object lists alike, with nothing missed', async () => {
    for (let i = 0; i < 1203; i++) sim.store.create(Resources.configmaps, configMap(`cm-${i}`, { i: String(i) }));
    for (let i = 0; i < 1001; i++) {
      sim.store.create(Resources.ippools, {
        apiVersion: 'network.harvesterhci.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: `p-${i}`, namespace: 'default' },
        spec: { ipv4Config: { cidr: '10.0.0.0/24', serverIP: '10.0.0.2', pool: { start: '10.0.0.10', end: '10.0.0.250' } }, networkName: 'default/net' },
      });
    }
    const pages: Record<string, number> = {};
    sim.api.hooks.beforeRequest = (info) => {
      if (info.verb === 'list') pages[info.resource.plural] = (pages[info.resource.plural] ?? 0) + 1;
    };
    const { informer } = newInformer();
    const pools = new Informer<KubernetesObject>({
      name: 'ippools',
      path: '/apis/network.harvesterhci.io/v1alpha1/ippools',
      list: async (page) =>
        (await kube.custom.listClusterCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', ...page })) as never,
      watch: kube.watch,
    });
    informersAny.push(pools);
    informer.start();
    pools.start();
    await Promise.all([informer.waitForSync(), pools.waitForSync()]);
    expect(informer.list()).toHaveLength(1203);
    expect(pools.list()).toHaveLength(1001);
    expect(pages).toEqual({ configmaps: 3, ippools: 3 });
    // The cache is as of the first page's resourceVersion (all pages come from one snapshot).
    expect(informer.lastSyncResourceVersion()).toBe(pools.lastSyncResourceVersion());
    put('cm-7', { i: 'changed' });
    await until('the watch after a paged list', () => informer.get('default', 'cm-7')?.data?.i === 'changed', { timeoutMs: 5_000, intervalMs: 5 });
  });

  it('stops cleanly while a list is in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let listing = false;
    sim.api.hooks.beforeRequest = async (info) => {
      if (info.verb === 'list') {
        listing = true;
        await gate;
      }
    };
    const { informer } = newInformer();
    informer.start();
    await until('the list request', () => listing, { timeoutMs: 5_000, intervalMs: 5 });
    const stopped = informer.stop();
    release();
    await stopped;
    expect(informer.stats.watches).toBe(0);
    expect(sim.api.watchCount()).toBe(0);
  });

  it('feeds a controller through mapping functions and predicates', async () => {
    const { informer } = newInformer();
    const reconciled: string[] = [];
    const controller = new Controller({
      name: 'owners',
      reconciler: {
        async reconcile(req) {
          reconciled.push(`${req.namespace}/${req.name}`);
        },
      },
    });
    feed(informer, controller, { map: enqueueOwner('Widget', { apiVersion: 'example.com/v1' }) });
    feed(informer, controller, { map: enqueueByLabels('pool-namespace', 'pool-name'), predicates: [generationChanged()] });
    sim.store.create(
      Resources.configmaps,
      configMap('owned', {}, { ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w1', uid: 'u1', controller: true }] }),
    );
    sim.store.create(Resources.configmaps, configMap('labelled', {}, { labels: { 'pool-namespace': 'pools', 'pool-name': 'p1' } }));
    informer.start();
    await informer.waitForSync();
    controller.start(); // resync from the cache
    await until('resync', () => reconciled.length >= 2, { timeoutMs: 5_000, intervalMs: 5 });
    expect(reconciled.sort()).toEqual(['default/w1', 'pools/p1']);
    reconciled.length = 0;
    // The owner mapping has no predicate: any change of the owned object reaches its owner.
    const owned = sim.store.get(Resources.configmaps, 'default', 'owned')!;
    sim.store.update(Resources.configmaps, { ...owned, data: { x: '1' } });
    await until('owner event', () => reconciled.includes('default/w1'), { timeoutMs: 5_000, intervalMs: 5 });
    await controller.stop();
  });
});

describe('Informer and objects a kube-apiserver never sends (attack 15, F4)', () => {
  const good = (name: string, rv: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', resourceVersion: rv } });

  it('skips them in a list and in a watch, counting and telling each, and caches the good objects', async () => {
    let send: ((type: string, obj: unknown) => void) | undefined;
    const watch = {
      watch: async (_path: string, _query: unknown, onEvent: (type: string, obj: unknown) => void) => {
        send = onEvent;
        return new AbortController();
      },
    };
    const malformed: string[] = [];
    const informer = new Informer<KubernetesObject>({
      name: 'configmaps',
      path: '/api/v1/namespaces/default/configmaps',
      list: async () => ({
        apiVersion: 'v1',
        kind: 'ConfigMapList',
        metadata: { resourceVersion: '5' },
        items: [
          good('a', '1'),
          null,
          'str',
          { kind: 'ConfigMap' },
          { metadata: null },
          { metadata: { name: 7 } },
          good('__proto__', '2'),
          good('b', '3'),
        ] as KubernetesObject[],
      }),
      watch: watch as never,
      onMalformed: (reason, from) => malformed.push(`${from}: ${reason}`),
    });
    informersAny.push(informer);
    informer.start();
    await informer.waitForSync();
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['a', 'b']);
    expect(malformed).toEqual([
      'list: not an object (null)',
      'list: not an object (string)',
      'list: metadata is missing or not an object',
      'list: metadata is missing or not an object',
      'list: metadata.name is not a string',
      'list: metadata.name is not a valid name (DNS-1123 subdomain)',
    ]);
    await until('the watch', () => send !== undefined, { timeoutMs: 5_000, intervalMs: 5 });
    send!('ADDED', { metadata: { name: 'c', namespace: ['x'] } });
    send!('MODIFIED', null);
    send!('ADDED', good('c', '6'));
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['a', 'b', 'c']);
    expect(malformed.slice(6)).toEqual(['watch: metadata.namespace is not a valid namespace (DNS-1123 label)', 'watch: not an object (null)']);
    expect(informer.stats.skipped).toBe(8);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('tells each failed list before its first sync, counting the failures in a row', async () => {
    let lists = 0;
    const failures: number[] = [];
    const informer = new Informer<V1ConfigMap>({
      name: 'configmaps',
      path: '/api/v1/namespaces/default/configmaps',
      list: (page) => {
        lists++;
        if (lists <= 3) throw Object.assign(new Error('boom'), { statusCode: 500 });
        return kube.core.listNamespacedConfigMap({ namespace: 'default', ...page });
      },
      watch: kube.watch,
      initialBackoffMs: 5,
      maxBackoffMs: 20,
      onSyncFailure: (error, inARow) => failures.push(inARow, (error as { statusCode: number }).statusCode),
    });
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    expect(failures).toEqual([1, 500, 2, 500, 3, 500]);
  });
});
