import { describe, expect, it } from 'vitest';
import { SimApiError } from '../../../src/sim/store/errors.js';
import { isStoredVersion, MemoryStore } from '../../../src/sim/store/MemoryStore.js';
import { objectJson } from '../../../src/sim/api/json.js';
import { Resources } from '../../../src/sim/store/resources.js';
import type { KubeObject, StoreEvent } from '../../../src/sim/types.js';

const cm = (name: string, data: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data,
});

function thrown(fn: () => unknown): SimApiError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SimApiError);
    return error as SimApiError;
  }
  throw new Error('expected a SimApiError');
}

describe('MemoryStore', () => {
  it('hands out frozen objects and never keeps the caller’s input', () => {
    const store = new MemoryStore();
    const input = cm('a', { v: '1' });
    const stored = store.create(Resources.configmaps, input);
    input.data = { v: 'changed by caller' };
    expect(store.get(Resources.configmaps, 'default', 'a')!.data).toEqual({ v: '1' });
    expect(Object.isFrozen(stored)).toBe(true);
    expect(Object.isFrozen(stored.metadata)).toBe(true);
    expect(() => {
      (stored.data as Record<string, string>).v = 'x';
    }).toThrow(TypeError);
  });

  it('without freezing still never keeps the caller’s input, and serializes each version afresh', () => {
    const store = new MemoryStore({ freeze: false });
    const input = cm('a', { v: '1' });
    const first = store.create(Resources.configmaps, input);
    input.data = { v: 'changed by caller' };
    expect(Object.isFrozen(first)).toBe(false);
    expect(isStoredVersion(first)).toBe(true);
    expect(JSON.parse(objectJson(first)).data).toEqual({ v: '1' });
    const second = store.update(Resources.configmaps, { ...structuredClone(first), data: { v: '2' } });
    expect(JSON.parse(objectJson(second)).data).toEqual({ v: '2' });
    // Only stored versions are cached: an object of the caller's is serialized as it is now.
    const own = cm('b', { v: '1' });
    objectJson(own);
    own.data = { v: '2' };
    expect(JSON.parse(objectJson(own)).data).toEqual({ v: '2' });
  });

  it('delivers events in commit order even when a listener writes from inside its callback', () => {
    const store = new MemoryStore({ initialNamespaces: ['default'] });
    const first: string[] = [];
    const second: string[] = [];
    store.subscribe((e) => {
      first.push(`${e.type} ${e.object.metadata.name}`);
      if (e.object.metadata.name === 'a' && e.type === 'ADDED') store.create(Resources.configmaps, cm('b'));
    });
    store.subscribe((e) => second.push(`${e.type} ${e.object.metadata.name}`));
    store.create(Resources.configmaps, cm('a'));
    expect(first).toEqual(['ADDED a', 'ADDED b']);
    expect(second).toEqual(['ADDED a', 'ADDED b']);
  });

  it('bumps resourceVersion on every write, generation only on spec changes, and skips no-op updates', () => {
    const store = new MemoryStore();
    const dep = store.create(Resources.deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd', namespace: 'default' },
      spec: { replicas: 1 },
    });
    expect(dep.metadata.generation).toBe(1);
    const labelled = store.update(Resources.deployments, { ...dep, metadata: { ...dep.metadata, labels: { a: 'b' } } });
    expect(labelled.metadata.generation).toBe(1);
    expect(Number(labelled.metadata.resourceVersion)).toBe(Number(dep.metadata.resourceVersion) + 1);
    const scaled = store.update(Resources.deployments, { ...labelled, spec: { replicas: 3 } });
    expect(scaled.metadata.generation).toBe(2);
    const status = store.update(Resources.deployments, { ...scaled, status: { replicas: 3 } }, 'status');
    expect(status.metadata.generation).toBe(2);
    expect(store.update(Resources.deployments, status)).toBe(status);
  });

  it('replays history from a revision and answers 410 Expired beyond the window', () => {
    const store = new MemoryStore({ historySize: 3, initialNamespaces: ['default'] });
    const start = store.currentRevision();
    for (const n of ['a', 'b', 'c', 'd']) store.create(Resources.configmaps, cm(n));
    expect(store.eventsSince(start + 1).map((e: StoreEvent) => e.object.metadata.name)).toEqual(['b', 'c', 'd']);
    expect(store.eventsSince(start + 3, Resources.configmaps).map((e) => e.object.metadata.name)).toEqual(['d']);
    expect(store.eventsSince(start + 1, Resources.pods)).toEqual([]);
    const error = thrown(() => store.eventsSince(start));
    expect([error.code, error.reason]).toEqual([410, 'Expired']);
  });

  it('sends one DELETED event carrying a fresh revision when an object goes', () => {
    const store = new MemoryStore();
    const events: StoreEvent[] = [];
    store.create(Resources.configmaps, cm('gone'));
    store.subscribe((e) => events.push(e));
    const deleted = store.delete(Resources.configmaps, 'default', 'gone');
    expect(events.map((e) => e.type)).toEqual(['DELETED']);
    expect(deleted.metadata.resourceVersion).toBe(String(store.currentRevision()));
    expect(store.get(Resources.configmaps, 'default', 'gone')).toBeUndefined();
  });

  it('keeps a bound pod until a grace-0 delete, and deletes a finished one at once', () => {
    const store = new MemoryStore();
    const pod = (name: string, phase?: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { nodeName: 'n1', containers: [] },
      ...(phase ? { status: { phase } } : {}),
    });
    store.create(Resources.pods, pod('running', 'Running'));
    store.create(Resources.pods, pod('done', 'Succeeded'));
    const terminating = store.delete(Resources.pods, 'default', 'running');
    expect(terminating.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(store.delete(Resources.pods, 'default', 'running', { gracePeriodSeconds: 10 }).metadata.deletionGracePeriodSeconds).toBe(10);
    store.delete(Resources.pods, 'default', 'running', { gracePeriodSeconds: 0 });
    expect(store.get(Resources.pods, 'default', 'running')).toBeUndefined();
    store.delete(Resources.pods, 'default', 'done');
    expect(store.get(Resources.pods, 'default', 'done')).toBeUndefined();
  });

  it('removes a namespace together with everything in it', () => {
    const store = new MemoryStore();
    store.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tmp' } });
    store.create(Resources.configmaps, { ...cm('x'), metadata: { name: 'x', namespace: 'tmp', finalizers: ['f'] } });
    store.delete(Resources.namespaces, undefined, 'tmp');
    expect(store.list(Resources.configmaps, 'tmp')).toEqual([]);
    expect(thrown(() => store.create(Resources.configmaps, { ...cm('y'), metadata: { name: 'y', namespace: 'tmp' } })).code).toBe(404);
  });

  it('computes but does not commit inside dryRun', () => {
    const store = new MemoryStore();
    const revision = store.currentRevision();
    const events: StoreEvent[] = [];
    store.subscribe((e) => events.push(e));
    const created = store.dryRun(() => store.create(Resources.configmaps, cm('dry')));
    expect(created.metadata.uid).toBeTruthy();
    expect(store.get(Resources.configmaps, 'default', 'dry')).toBeUndefined();
    expect(store.currentRevision()).toBe(revision);
    expect(events).toEqual([]);
  });
});
