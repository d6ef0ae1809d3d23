import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/errors.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import { kubeCall } from '../../src/kube/errors.js';
import { JsonRequests } from '../../src/kube/jsonRequests.js';
import { jsonPatchOptions, mergePatchOptions } from '../../src/kube/patch.js';
import { Resources, startSimulator, type Simulator } from '../../src/sim/index.js';
import type { KubeObject } from '../../src/sim/types.js';

// The per-target writes (create and delete a pod, replace an IPPool's status) go over plain JSON requests rather than
// client-node's generated path (src/kube/jsonRequests.ts): against the simulator over HTTP, the same outcomes, the same
// translated errors, the same query parameters, the same API budget.

let dir: string;
let sim: Simulator;
let clients: KubeClients;
const NS = 'json-requests';

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rollplane-json-'));
  sim = await startSimulator({ behaviour: false, fleet: 'pools=1,nodes=1,peers=0', kubeconfigPath: path.join(dir, 'kubeconfig') });
  clients = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1000, burst: 1000 });
  await clients.core.createNamespace({ body: { metadata: { name: NS } } });
});

afterAll(async () => {
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function pod(name: string): V1Pod {
  return { metadata: { name, namespace: NS }, spec: { containers: [{ name: 'main', image: 'busybox:1' }] } };
}

describe('per-target writes over JSON requests', () => {
  it('creates a pod and answers with the API object as JSON', async () => {
    const created = await clients.core.createNamespacedPod({ namespace: NS, body: pod('a') });
    expect(created.metadata?.uid).toBe(sim.store.get(Resources.pods, NS, 'a')?.metadata.uid);
    // The API's JSON, not client-node's models (client-node would give a Date): the fast path answered.
    expect(typeof created.metadata?.creationTimestamp).toBe('string');
  });

  it('passes the query on: a dry run stores nothing', async () => {
    const dry = await clients.core.createNamespacedPod({ namespace: NS, body: pod('dry'), dryRun: 'All' });
    expect(dry.metadata?.name).toBe('dry');
    expect(sim.store.get(Resources.pods, NS, 'dry')).toBeUndefined();
  });

  it('translates refusals as before: AlreadyExists and a failed precondition are conflicts, a missing pod NotFound', async () => {
    const again = kubeCall('create', () => clients.core.createNamespacedPod({ namespace: NS, body: pod('a') }));
    await expect(again).rejects.toBeInstanceOf(ConflictError);
    await expect(again).rejects.toMatchObject({ details: { httpStatus: 409, reason: 'AlreadyExists' } });
    const wrongUid = kubeCall('delete', () => clients.core.deleteNamespacedPod({ namespace: NS, name: 'a', body: { preconditions: { uid: 'not-its-uid' } } }));
    await expect(wrongUid).rejects.toBeInstanceOf(ConflictError);
    expect(sim.store.get(Resources.pods, NS, 'a')).toBeDefined();
    const uid = sim.store.get(Resources.pods, NS, 'a')!.metadata.uid!;
    await clients.core.deleteNamespacedPod({ namespace: NS, name: 'a', gracePeriodSeconds: 0, body: { preconditions: { uid }, gracePeriodSeconds: 0 } });
    expect(sim.store.get(Resources.pods, NS, 'a')).toBeUndefined();
    await expect(kubeCall('delete', () => clients.core.deleteNamespacedPod({ namespace: NS, name: 'a' }))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("replaces a custom object's status, refusing a stale resourceVersion", async () => {
    const type = sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const [pool] = sim.store.list(type);
    const ids = { group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', namespace: pool!.metadata.namespace!, name: pool!.metadata.name };
    const body = { ...pool!, status: { ...pool!.status, lastUpdate: '2026-12-05T00:00:00Z' } };
    const updated = (await clients.custom.replaceNamespacedCustomObjectStatus({ ...ids, body })) as { status: { lastUpdate: string } };
    expect(updated.status.lastUpdate).toBe('2026-12-05T00:00:00Z');
    expect(sim.store.get(type, ids.namespace, ids.name)?.status?.lastUpdate).toBe('2026-12-05T00:00:00Z');
    await expect(kubeCall('stale', () => clients.custom.replaceNamespacedCustomObjectStatus({ ...ids, body }))).rejects.toBeInstanceOf(ConflictError);
  });

  it("merge-patches a custom object's annotations on the fast path (mergePatchOptions): null removes one, a stale resourceVersion and a missing object are refused", async () => {
    const type = sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const [pool] = sim.store.list(type);
    const ids = { group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', namespace: pool!.metadata.namespace! };
    const send = vi.spyOn(JsonRequests.prototype, 'send');
    try {
      const patch = (name: string, metadata: object, query: object = {}) =>
        kubeCall('patch', () => clients.custom.patchNamespacedCustomObject({ ...ids, name, body: { metadata }, ...query }, mergePatchOptions()));
      const held = (await patch(pool!.metadata.name, { annotations: { 'example.com/hold': 'x', 'example.com/other': 'y' } })) as KubeObject;
      expect(held.metadata.annotations).toMatchObject({ 'example.com/hold': 'x', 'example.com/other': 'y' });
      // The fast path answered: the request went as a merge patch over JsonRequests.
      expect(send).toHaveBeenLastCalledWith(
        'PATCH',
        expect.stringContaining('/ippools/'),
        {},
        { metadata: expect.any(Object) },
        'application/merge-patch+json',
      );
      await patch(pool!.metadata.name, { annotations: { 'example.com/other': 'z' } }, { dryRun: 'All' });
      expect(sim.store.get(type, ids.namespace, pool!.metadata.name)?.metadata.annotations?.['example.com/other']).toBe('y');
      await patch(pool!.metadata.name, { annotations: { 'example.com/hold': null } });
      const stored = sim.store.get(type, ids.namespace, pool!.metadata.name)!;
      expect(stored.metadata.annotations?.['example.com/hold']).toBeUndefined();
      expect(stored.metadata.annotations?.['example.com/other']).toBe('y');
      await expect(patch(pool!.metadata.name, { annotations: { a: 'b' }, resourceVersion: '1' })).rejects.toBeInstanceOf(ConflictError);
      await expect(patch('no-such-pool', { annotations: { a: 'b' } })).rejects.toBeInstanceOf(NotFoundError);
      // Any other options (a JSON patch here) keep client-node's path.
      send.mockClear();
      await kubeCall('json patch', () =>
        clients.custom.patchNamespacedCustomObject(
          { ...ids, name: pool!.metadata.name, body: [{ op: 'add', path: '/metadata/annotations/example.com~1j', value: 'v' }] },
          jsonPatchOptions(),
        ),
      );
      expect(send).not.toHaveBeenCalled();
      expect(sim.store.get(type, ids.namespace, pool!.metadata.name)?.metadata.annotations?.['example.com/j']).toBe('v');
    } finally {
      send.mockRestore();
    }
  });

  it('takes a token from the API budget for each call', async () => {
    const budgeted = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 1, burst: 1 });
    await budgeted.core.createNamespacedPod({ namespace: NS, body: pod('b1') });
    // The burst is spent: the next call waits for the budget (it is not sent until then).
    let sent = false;
    const second = budgeted.core.createNamespacedPod({ namespace: NS, body: pod('b2') }).then(() => (sent = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toBe(false);
    expect(sim.store.get(Resources.pods, NS, 'b2')).toBeUndefined();
    await second;
    expect(sim.store.get(Resources.pods, NS, 'b2')).toBeDefined();
  });
});
