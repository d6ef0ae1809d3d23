import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Manager } from '../../src/controller/Manager.js';
import { Informer } from '../../src/controller/Informer.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import { Resources, type Simulator, startSimulator } from '../../src/sim/index.js';
import type { KubeObject } from '../../src/sim/types.js';
import { NO_LEADER_ELECTION } from '../helpers/controllerHost.js';
import { until } from '../helpers/until.js';

let sim: Simulator;
let kube: KubeClients;
let informer: Informer<V1ConfigMap>;

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
  informer = new Informer<V1ConfigMap>({
    name: 'configmaps',
    path: '/api/v1/configmaps',
    list: (page) => kube.core.listConfigMapForAllNamespaces(page),
    watch: kube.watch,
  });
});

afterEach(async () => {
  await informer.stop();
  await sim.stop();
});

const cm = (name: string, labels: Record<string, string>, namespace = 'default'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data: {},
});

function relabel(name: string, labels: Record<string, string>): void {
  const existing = sim.store.get(Resources.configmaps, 'default', name)!;
  sim.store.update(Resources.configmaps, { ...structuredClone(existing), metadata: { ...structuredClone(existing.metadata), labels } });
}

describe('InformerView', () => {
  it('holds, indexes and announces only the objects that pass its filter, as a selector would', async () => {
    sim.store.create(Resources.configmaps, cm('a', { role: 'agent', pool: 'p1' }));
    sim.store.create(Resources.configmaps, cm('b', { role: 'other' }));
    const view = informer.view({
      name: 'agents',
      filter: (o) => o.metadata?.labels?.role === 'agent',
      indexers: { pool: (o) => [o.metadata?.labels?.pool ?? ''] },
    });
    const events: string[] = [];
    view.addEventHandler({
      onAdd: (o) => events.push(`add ${o.metadata?.name}`),
      onUpdate: (_o, n) => events.push(`update ${n.metadata?.name}`),
      onDelete: (o) => events.push(`delete ${o.metadata?.name}`),
    });
    informer.start();
    await informer.waitForSync();
    expect(view.hasSynced()).toBe(true);
    expect(view.list().map((o) => o.metadata?.name)).toEqual(['a']);
    expect(view.byIndex('pool', 'p1').map((o) => o.metadata?.name)).toEqual(['a']);
    expect(view.get('default', 'b')).toBeUndefined();

    relabel('b', { role: 'agent', pool: 'p2' }); // starts passing: an add
    relabel('a', { role: 'agent', pool: 'p3' }); // still passes: an update, re-indexed
    await until('the add and the update', () => events.length >= 3, { timeoutMs: 5_000, intervalMs: 5 });
    relabel('a', { role: 'other' }); // stops passing: a delete
    sim.store.delete(Resources.configmaps, 'default', 'b'); // deleted while passing: a delete
    await until('the deletes', () => events.length >= 5, { timeoutMs: 5_000, intervalMs: 5 });
    expect(events).toEqual(['add a', 'add b', 'update a', 'delete a', 'delete b']);
    expect(view.list()).toEqual([]);
    expect(view.byIndex('pool', 'p3')).toEqual([]);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['a']); // the informer still has everything
  });

  it('made after the informer synced, starts from what the informer holds', async () => {
    sim.store.create(Resources.configmaps, cm('a', { role: 'agent' }));
    informer.start();
    await informer.waitForSync();
    const view = informer.view({ name: 'agents', filter: (o) => o.metadata?.labels?.role === 'agent' });
    expect(view.list().map((o) => o.metadata?.name)).toEqual(['a']);
    // Same objects, not copies.
    expect(view.get('default', 'a')).toBe(informer.get('default', 'a'));
  });
});

describe('Manager.informer', () => {
  it('shares one informer per path and selectors, with every caller’s indexers', async () => {
    const manager = new Manager({
      clients: kube,
      registry: new Registry(),
      logger: pino({ level: 'silent' }),
      leaderElection: NO_LEADER_ELECTION,
      runControllers: false,
    });
    const list = (page: { limit: number; _continue?: string }) => kube.core.listConfigMapForAllNamespaces(page);
    const first = manager.informer<V1ConfigMap>({
      name: 'one',
      path: '/api/v1/configmaps',
      list,
      indexers: { byRole: (o) => [o.metadata?.labels?.role ?? ''] },
    });
    const second = manager.informer<V1ConfigMap>({
      name: 'two',
      path: '/api/v1/configmaps',
      list,
      indexers: { byPool: (o) => [o.metadata?.labels?.pool ?? ''] },
    });
    const selected = manager.informer<V1ConfigMap>({ name: 'three', path: '/api/v1/configmaps', labelSelector: 'role=agent', list });
    expect(second).toBe(first);
    expect(selected).not.toBe(first);
    sim.store.create(Resources.configmaps, cm('a', { role: 'agent', pool: 'p1' }));
    await manager.start();
    try {
      expect(first.byIndex('byRole', 'agent').map((o) => o.metadata?.name)).toEqual(['a']);
      expect(first.byIndex('byPool', 'p1').map((o) => o.metadata?.name)).toEqual(['a']);
      expect(first.stats.lists).toBe(1);
    } finally {
      await manager.stop();
    }
  });
});
