import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Controller } from '../../src/controller/Controller.js';
import { Informer } from '../../src/controller/Informer.js';
import { Manager } from '../../src/controller/Manager.js';
import { feed } from '../../src/controller/sources.js';
import { createKubeClients } from '../../src/kube/createKubeClients.js';
import { Resources, type Simulator, startSimulator } from '../../src/sim/index.js';

let sim: Simulator;
const managers: Manager[] = [];

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  sim.store.create(Resources.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace: 'default' } });
});

afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop();
  await sim.stop();
});

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

function replica(id: string, reconciled: string[], leaderElection: boolean): { manager: Manager; informer: Informer<V1ConfigMap> } {
  const kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
  const informer = new Informer<V1ConfigMap>({
    name: 'configmaps',
    path: '/api/v1/namespaces/default/configmaps',
    list: () => kube.core.listNamespacedConfigMap({ namespace: 'default' }),
    watch: kube.watch,
  });
  const controller = new Controller({
    name: 'configmaps',
    reconciler: {
      async reconcile(req) {
        // Reads the cache, not the API, as reconcilers should.
        if (informer.get(req.namespace, req.name)) reconciled.push(`${id}:${req.name}`);
      },
    },
  });
  feed(informer, controller);
  const manager = new Manager(
    leaderElection
      ? { leaderElection: { coordination: kube.coordination, namespace: 'default', name: 'rollplane', identity: id, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 100 } }
      : {},
  );
  manager.addCache(informer);
  manager.addController(controller);
  managers.push(manager);
  return { manager, informer };
}

describe('Manager', () => {
  it('without leader election, syncs caches and then runs its controllers', async () => {
    const reconciled: string[] = [];
    const { manager } = replica('solo', reconciled, false);
    await manager.start();
    expect(manager.cachesSynced()).toBe(true);
    expect(manager.isLeader()).toBe(true);
    await until(() => reconciled.length === 1, 'resync');
    sim.store.create(Resources.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two', namespace: 'default' } });
    await until(() => reconciled.length === 2, 'watch event');
    expect(reconciled).toEqual(['solo:one', 'solo:two']);
    expect(manager.snapshot()).toEqual([
      expect.objectContaining({ name: 'configmaps', running: true, depth: 0, inFlight: [], retries: {}, lastErrors: {} }),
    ]);
    await manager.stop();
    expect(manager.phase).toBe('stopped');
    expect(manager.snapshot()[0]?.running).toBe(false);
  });

  it('with leader election, keeps caches warm on both replicas but reconciles only on the leader, and hands over', async () => {
    const reconciled: string[] = [];
    const a = replica('a', reconciled, true);
    const b = replica('b', reconciled, true);
    await a.manager.start();
    await until(() => a.manager.isLeader(), 'a leads');
    await b.manager.start();
    expect(b.informer.get('default', 'one')).toBeDefined(); // warm cache on the follower
    sim.store.create(Resources.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two', namespace: 'default' } });
    await until(() => reconciled.length === 2, 'a reconciles');
    await new Promise((r) => setTimeout(r, 300));
    expect(b.manager.isLeader()).toBe(false);
    expect(reconciled.every((r) => r.startsWith('a:'))).toBe(true);
    await a.manager.stop();
    await until(() => b.manager.isLeader(), 'b takes over');
    await until(() => reconciled.filter((r) => r.startsWith('b:')).length === 2, 'b resyncs');
    expect(reconciled.filter((r) => r.startsWith('b:')).sort()).toEqual(['b:one', 'b:two']);
  });
});
