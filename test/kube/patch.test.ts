import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/errors.js';
import { createKubeClients, type KubeClients } from '../../src/kube/createKubeClients.js';
import { kubeCall } from '../../src/kube/errors.js';
import { applyParams, applyPatchOptions, jsonPatchOptions, mergePatchOptions } from '../../src/kube/patch.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';

let sim: Simulator;
let kube: KubeClients;

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath });
  await kube.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'cm', labels: { a: '1' } }, data: { x: '1' } } });
});

afterEach(async () => {
  await sim.stop();
});

describe('patch helpers and error translation against the simulator', () => {
  it('sends a merge patch with the merge-patch Content-Type, through the API budget', async () => {
    const before = kube.budget.admitted;
    const patched = await kube.core.patchNamespacedConfigMap(
      { name: 'cm', namespace: 'default', body: { metadata: { labels: { b: '2' } }, data: { y: '2' } } },
      mergePatchOptions(),
    );
    expect(patched.metadata?.labels).toEqual({ a: '1', b: '2' });
    expect(patched.data).toEqual({ x: '1', y: '2' });
    // Per-call options (the Content-Type middleware) must not bypass the budget.
    expect(kube.budget.admitted).toBe(before + 1);
  });

  it('sends a JSON patch', async () => {
    const patched = await kube.core.patchNamespacedConfigMap(
      { name: 'cm', namespace: 'default', body: [{ op: 'replace', path: '/data/x', value: 'json' }] },
      jsonPatchOptions(),
    );
    expect(patched.data).toEqual({ x: 'json' });
  });

  it('server-side applies with a field manager and force', async () => {
    const applied = await kube.core.patchNamespacedConfigMap(
      {
        name: 'cm',
        namespace: 'default',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default' }, data: { x: 'applied' } },
        ...applyParams('rollplane'),
      },
      applyPatchOptions(),
    );
    expect(applied.data?.x).toBe('applied');
    expect(applied.metadata?.managedFields?.some((f) => f.manager === 'rollplane' && f.operation === 'Apply')).toBe(true);
  });

  it('translates 404 and 409 from real calls', async () => {
    await expect(kubeCall('read cm', () => kube.core.readNamespacedConfigMap({ name: 'nope', namespace: 'default' }))).rejects.toBeInstanceOf(NotFoundError);
    const current = await kube.core.readNamespacedConfigMap({ name: 'cm', namespace: 'default' });
    await kube.core.replaceNamespacedConfigMap({ name: 'cm', namespace: 'default', body: { ...current, data: { x: 'first' } } });
    const stale = kubeCall('replace cm', () =>
      kube.core.replaceNamespacedConfigMap({ name: 'cm', namespace: 'default', body: { ...current, data: { x: 'stale' } } }),
    );
    await expect(stale).rejects.toBeInstanceOf(ConflictError);
    await expect(stale).rejects.toThrow(/replace cm: /);
  });
});
