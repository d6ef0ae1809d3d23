import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { apiVersionOf, Resources } from '../../../src/sim/store/resources.js';

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ behaviour: false, fleet: 'demo' });
});

afterAll(async () => {
  await sim?.stop();
});

describe('the demo fleet against the CRD schemas', () => {
  it('installs the four CRDs', () => {
    const names = sim.store
      .list(Resources.customresourcedefinitions)
      .map((c) => c.metadata.name)
      .sort();
    expect(names).toEqual([
      'clusterversions.tenancy.x-k8s.io',
      'ippools.network.harvesterhci.io',
      'network-attachment-definitions.k8s.cni.cncf.io',
      'virtualclusters.tenancy.x-k8s.io',
    ]);
  });

  it('holds only custom objects that a strict server-side dry-run replace accepts unchanged', async () => {
    const custom = sim.store.resourceTypes().filter((t) => t.custom);
    let checked = 0;
    for (const type of custom) {
      for (const object of sim.store.list(type)) {
        const base = `/${type.group ? `apis/${apiVersionOf(type)}` : 'api/v1'}${type.namespaced ? `/namespaces/${object.metadata.namespace}` : ''}/${type.plural}/${object.metadata.name}`;
        const response = await fetch(`${sim.url}${base}?fieldValidation=Strict&dryRun=All`, {
          method: 'PUT',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(object),
        });
        const body = (await response.json()) as { message?: string; spec?: unknown };
        expect(response.status, `${type.kind} ${object.metadata.name}: ${body.message}`).toBe(200);
        expect(response.headers.get('warning')).toBeNull();
        expect(body.spec).toEqual(object.spec);
        checked++;
      }
    }
    expect(checked).toBe(3 + 3 + 2 + 1);
  });

  it('writes VirtualCluster conditions without the `type` the upstream CRD does not declare', () => {
    for (const vc of sim.store.list(Resources.virtualclusters)) {
      expect(vc.status.phase).toBe('Running');
      for (const condition of vc.status.conditions) expect(condition).not.toHaveProperty('type');
    }
  });
});
