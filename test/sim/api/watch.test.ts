import { CoreV1Api, makeInformer, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import { expectStatus } from '../apiHelpers.js';
import { until } from '../../helpers/until.js';

interface Seen {
  type: string;
  name: string;
  rv: string;
  object: any;
}

/** Starts a client-node watch and collects its events; `done` resolves when the server ends the stream. */
async function watchCollect(sim: Simulator, path: string, query: Record<string, string | number | boolean>) {
  const events: Seen[] = [];
  let finished: (err: unknown) => void = () => undefined;
  const done = new Promise<unknown>((resolve) => (finished = resolve));
  const controller = await new Watch(sim.kubeConfig).watch(
    path,
    query,
    (type, object) => events.push({ type, name: object?.metadata?.name, rv: object?.metadata?.resourceVersion, object }),
    (err) => finished(err),
  );
  return { events, done, abort: () => controller.abort() };
}

describe('watch', () => {
  let sim: Simulator;
  let core: CoreV1Api;

  beforeAll(async () => {
    sim = await startSimulator({ behaviour: false, bookmarkIntervalMs: 25 });
    core = sim.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('resumes from a list resourceVersion with exactly the later changes, in order', async () => {
    await core.createNamespace({ body: { metadata: { name: 'resume' } } });
    await core.createNamespacedConfigMap({ namespace: 'resume', body: { metadata: { name: 'a' }, data: { v: '1' } } });
    const list = await core.listNamespacedConfigMap({ namespace: 'resume' });
    const from = list.metadata!.resourceVersion!;
    await core.createNamespacedConfigMap({ namespace: 'resume', body: { metadata: { name: 'b' } } });
    await core.patchNamespacedConfigMap({ name: 'a', namespace: 'resume', body: [{ op: 'replace', path: '/data/v', value: '2' }] });
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: 'resume' });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'elsewhere' } } });

    const w = await watchCollect(sim, '/api/v1/namespaces/resume/configmaps', { resourceVersion: from });
    await until('replayed events', () => w.events.length >= 3, 5_000);
    await core.createNamespacedConfigMap({ namespace: 'resume', body: { metadata: { name: 'c' } } });
    await until('live event', () => w.events.length >= 4, 5_000);
    w.abort();
    expect(w.events.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED b', 'MODIFIED a', 'DELETED b', 'ADDED c']);
    const rvs = w.events.map((e) => Number(e.rv));
    expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
    expect(rvs[0]).toBeGreaterThan(Number(from));
    expect(w.events[1]!.object.data).toEqual({ v: '2' });
  });

  it('starts with the current state as ADDED events when no resourceVersion is given', async () => {
    const w = await watchCollect(sim, '/api/v1/namespaces/resume/configmaps', {});
    await until('initial events', () => w.events.length >= 2, 5_000);
    w.abort();
    expect(w.events.map((e) => `${e.type} ${e.name}`).sort()).toEqual(['ADDED a', 'ADDED c']);
  });

  it('delivers DELETED when an object stops matching the label selector and ADDED when it starts', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'sel', labels: { watch: 'yes' } } } });
    const w = await watchCollect(sim, '/api/v1/namespaces/default/configmaps', {
      labelSelector: 'watch=yes',
      resourceVersion: String(sim.store.currentRevision()),
    });
    await core.patchNamespacedConfigMap({ name: 'sel', namespace: 'default', body: [{ op: 'replace', path: '/metadata/labels/watch', value: 'no' }] });
    await core.patchNamespacedConfigMap({ name: 'sel', namespace: 'default', body: [{ op: 'replace', path: '/metadata/labels/watch', value: 'yes' }] });
    await until('selector transitions', () => w.events.length >= 2, 5_000);
    w.abort();
    expect(w.events.map((e) => e.type)).toEqual(['DELETED', 'ADDED']);
  });

  it('sends BOOKMARK events when asked to', async () => {
    const w = await watchCollect(sim, '/api/v1/configmaps', { allowWatchBookmarks: true, resourceVersion: String(sim.store.currentRevision()) });
    await until('a bookmark', () => w.events.some((e) => e.type === 'BOOKMARK'), 5_000);
    w.abort();
    const bookmark = w.events.find((e) => e.type === 'BOOKMARK')!;
    expect(bookmark.object).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1' });
    expect(Number(bookmark.rv)).toBeGreaterThan(0);
  });

  it('fans every event out to many watchers, each in commit order', async () => {
    await core.createNamespace({ body: { metadata: { name: 'fanout' } } });
    const from = String(sim.store.currentRevision());
    const watchers = await Promise.all(Array.from({ length: 20 }, () => watchCollect(sim, '/api/v1/namespaces/fanout/configmaps', { resourceVersion: from })));
    await until('watchers', () => sim.api.watchCount() >= 20, 5_000);
    const writes = 200;
    await Promise.all(Array.from({ length: writes }, (_, i) => core.createNamespacedConfigMap({ namespace: 'fanout', body: { metadata: { name: `f${i}` } } })));
    await until('all events everywhere', () => watchers.every((w) => w.events.length >= writes), 10_000);
    const expected = watchers[0]!.events.map((e) => e.rv);
    expect(new Set(expected).size).toBe(writes);
    expect(expected.map(Number)).toEqual([...expected.map(Number)].sort((a, b) => a - b));
    for (const w of watchers) {
      w.abort();
      expect(w.events.map((e) => e.rv)).toEqual(expected);
    }
  });

  it('holds back events up to a resourceVersion from the future', async () => {
    await core.createNamespace({ body: { metadata: { name: 'future' } } });
    const ahead = sim.store.currentRevision() + 2;
    const w = await watchCollect(sim, '/api/v1/namespaces/future/configmaps', { resourceVersion: String(ahead) });
    for (const name of ['a', 'b', 'c']) await core.createNamespacedConfigMap({ namespace: 'future', body: { metadata: { name } } });
    await until('the event after the future revision', () => w.events.length >= 1, 5_000);
    w.abort();
    expect(w.events.map((e) => e.name)).toEqual(['c']);
  });

  it('ends the stream after timeoutSeconds', async () => {
    const w = await watchCollect(sim, '/api/v1/nodes', { timeoutSeconds: 1, resourceVersion: String(sim.store.currentRevision()) });
    expect(await w.done).toBeNull();
  });

  it('lets an informer survive a dropped watch and see later updates', async () => {
    await core.createNamespace({ body: { metadata: { name: 'informer' } } });
    await core.createNamespacedConfigMap({ namespace: 'informer', body: { metadata: { name: 'x' }, data: { v: '1' } } });
    const informer = makeInformer<V1ConfigMap>(sim.kubeConfig, '/api/v1/namespaces/informer/configmaps', () =>
      core.listNamespacedConfigMap({ namespace: 'informer' }),
    );
    const updates: string[] = [];
    const errors: unknown[] = [];
    informer.on('update', (o) => updates.push(`${o.metadata!.name}=${o.data?.v}`));
    informer.on('error', (e) => errors.push(e));
    await informer.start();
    try {
      await until('informer watch', () => sim.api.watchCount() === 1, 5_000);
      expect(informer.get('x', 'informer')?.data).toEqual({ v: '1' });

      expect(sim.api.dropWatches()).toBe(1);
      // Written while no watch is open: the informer must catch it up from its resourceVersion.
      await core.patchNamespacedConfigMap({ name: 'x', namespace: 'informer', body: [{ op: 'replace', path: '/data/v', value: '2' }] });
      await until('informer re-watch', () => sim.api.watchCount() === 1, 5_000);
      await core.patchNamespacedConfigMap({ name: 'x', namespace: 'informer', body: [{ op: 'replace', path: '/data/v', value: '3' }] });
      await core.createNamespacedConfigMap({ namespace: 'informer', body: { metadata: { name: 'y' } } });
      await until('informer catch-up', () => informer.get('x', 'informer')?.data?.v === '3' && informer.get('y', 'informer') !== undefined, 5_000);
      expect(updates).toEqual(['x=2', 'x=3']);
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  });
});

describe('bounded history', () => {
  let sim: Simulator;
  let core: CoreV1Api;

  beforeAll(async () => {
    sim = await startSimulator({ behaviour: false, historySize: 10 });
    core = sim.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('answers a watch from an expired resourceVersion with a 410 Expired ERROR event', async () => {
    const old = (await core.listNamespacedConfigMap({ namespace: 'default' })).metadata!.resourceVersion!;
    for (let i = 0; i < 15; i++) await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `h${i}` } } });
    const w = await watchCollect(sim, '/api/v1/namespaces/default/configmaps', { resourceVersion: old });
    await w.done;
    expect(w.events).toHaveLength(1);
    expect(w.events[0]!.type).toBe('ERROR');
    expect(w.events[0]!.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('still resumes from a resourceVersion inside the window', async () => {
    const from = String(sim.store.currentRevision() - 5);
    const w = await watchCollect(sim, '/api/v1/namespaces/default/configmaps', { resourceVersion: from });
    await until('replay', () => w.events.length >= 5, 5_000);
    w.abort();
    expect(w.events.every((e) => e.type === 'ADDED')).toBe(true);
  });

  it('answers a continue token older than the window with 410 Expired', async () => {
    const first = await core.listNamespacedConfigMap({ namespace: 'default', limit: 3 });
    expect(first.metadata?._continue).toBeTruthy();
    for (let i = 0; i < 15; i++) await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `later${i}` } } });
    await expectStatus(core.listNamespacedConfigMap({ namespace: 'default', limit: 3, _continue: first.metadata!._continue! }), 410, 'Expired');
  });
});

describe('paging', () => {
  let sim: Simulator;
  let core: CoreV1Api;

  beforeAll(async () => {
    sim = await startSimulator({ behaviour: false });
    core = sim.kubeConfig.makeApiClient(CoreV1Api);
    for (const ns of ['p1', 'p2']) sim.store.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (let i = 0; i < 10_000; i++) {
      sim.store.create(Resources.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `cm-${i}`, namespace: i % 2 ? 'p1' : 'p2', labels: { bucket: String(i % 3) } },
        data: { i: String(i) },
      });
    }
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('pages a 10,000-object list with limit/continue: none missing, no duplicates, one resourceVersion', async () => {
    const seen = new Set<string>();
    const versions = new Set<string>();
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await core.listConfigMapForAllNamespaces({ limit: 700, ...(token ? { _continue: token } : {}) });
      pages++;
      expect(page.items.length).toBeLessThanOrEqual(700);
      for (const item of page.items) {
        const key = `${item.metadata!.namespace}/${item.metadata!.name}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
      }
      versions.add(page.metadata!.resourceVersion!);
      token = page.metadata?._continue || undefined;
      if (token) expect(page.metadata?.remainingItemCount).toBe(10_000 - seen.size);
    } while (token);
    expect(seen.size).toBe(10_000);
    expect(pages).toBe(Math.ceil(10_000 / 700));
    expect(versions.size).toBe(1);
  });

  it('serves later pages as of the first page’s revision while objects change in between', async () => {
    sim.store.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'snap' } });
    for (let i = 0; i < 10; i++) {
      sim.store.create(Resources.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c0${i}`, namespace: 'snap' }, data: { v: 'old' } });
    }
    const first = await core.listNamespacedConfigMap({ namespace: 'snap', limit: 4 });
    expect(first.items.map((i) => i.metadata!.name)).toEqual(['c00', 'c01', 'c02', 'c03']);
    await core.deleteNamespacedConfigMap({ name: 'c05', namespace: 'snap' });
    await core.createNamespacedConfigMap({ namespace: 'snap', body: { metadata: { name: 'c045' } } });
    await core.replaceNamespacedConfigMap({ name: 'c06', namespace: 'snap', body: { metadata: { name: 'c06' }, data: { v: 'new' } } });
    const second = await core.listNamespacedConfigMap({ namespace: 'snap', limit: 4, _continue: first.metadata!._continue! });
    expect(second.items.map((i) => `${i.metadata!.name}=${i.data?.v}`)).toEqual(['c04=old', 'c05=old', 'c06=old', 'c07=old']);
    expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    const third = await core.listNamespacedConfigMap({ namespace: 'snap', limit: 4, _continue: second.metadata!._continue! });
    expect(third.items.map((i) => i.metadata!.name)).toEqual(['c08', 'c09']);
    expect(third.metadata?._continue).toBeFalsy();
  });

  it('pages a filtered list', async () => {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await core.listNamespacedConfigMap({ namespace: 'p1', labelSelector: 'bucket=0', limit: 250, ...(token ? { _continue: token } : {}) });
      names.push(...page.items.map((i) => i.metadata!.name!));
      token = page.metadata?._continue || undefined;
    } while (token);
    const expected = Array.from({ length: 10_000 }, (_, i) => i).filter((i) => i % 2 === 1 && i % 3 === 0);
    expect(new Set(names).size).toBe(expected.length);
    expect(names.length).toBe(expected.length);
  });
});
