/**
 * Attack 18, M2: a process that did not make rollplane's change of the vm-dhcp-controller's --image — the replica that
 * took a member's shard over, or this one after a restart — recorded it as made outside rollplane (`planned: false`),
 * since only the writer's memory knew it. The write now names its rollout on the object it writes, with the generation
 * it gives it (src/kinds/agentPool/controller/imageWriteMarker.ts); any process reads it there, while nothing changed
 * that object's spec since. Here "another process" writes exactly what the lever writes, past this service's memory.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ANNOTATION_IMAGE_SET_FOR } from '../../../src/kinds/agentPool/controller/imageWriteMarker.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { BUMP, CONTROLLER, helmUpgrade, NEW, OLD, type Rig, startRig, waitForRollout } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const OTHER = 'ro_madebyanotherreplica';
const HELM = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
const ADDON = { group: 'harvesterhci.io', plural: 'addons' };

async function changes(r: Rig): Promise<any[]> {
  const data = await r.gql(`{ events(filter: { types: [UpstreamControllerChanged] }, first: 50) { edges { node { rolloutId payload } } } }`);
  return data.events.edges.map((e: any) => e.node).filter((e: any) => e.payload.firstSeen !== true);
}

function deploymentType(r: Rig) {
  return r.sim.store.resourceType('apps', 'deployments')!;
}

function deployment(r: Rig): KubeObject {
  return structuredClone(r.sim.store.get(deploymentType(r), CONTROLLER.namespace, CONTROLLER.name)!) as KubeObject;
}

describe("rollplane's own change of the controller's --image, seen by a process that did not make it", () => {
  it("the write carries its marker; a marked change is the rollout's (planned), a later helm upgrade is not", async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    // This service's own write names its rollout and the generation it gave the Deployment.
    const bump = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } });
    const id: string = bump.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const written = deployment(r);
    expect(written.metadata.annotations?.[ANNOTATION_IMAGE_SET_FOR]).toBe(`${id} ${NEW} ${written.metadata.generation}`);

    // Another process's write, as the lever makes it: the image and the marker in one change of the Deployment.
    const next = deployment(r);
    const args: string[] = next.spec.template.spec.containers[0].args;
    args[args.indexOf('--image') + 1] = OLD;
    next.metadata.annotations = { ...next.metadata.annotations, [ANNOTATION_IMAGE_SET_FOR]: `${OTHER} ${OLD} ${(next.metadata.generation ?? 0) + 1}` };
    r.sim.store.update(deploymentType(r), next);
    await r.waitFor('the change recorded', async () => (await changes(r)).length === 2);
    expect((await changes(r)).at(-1)).toMatchObject({
      rolloutId: OTHER,
      payload: { oldImage: NEW, newImage: OLD, planned: true, changedThrough: 'deployment' },
    });

    // A helm upgrade keeps the annotation, which names another image: not rollplane's.
    helmUpgrade(r, HELM);
    await r.waitFor('the helm upgrade recorded', async () => (await changes(r)).length === 3);
    expect((await changes(r)).at(-1)).toMatchObject({ payload: { oldImage: OLD, newImage: HELM, planned: false, reverts: OTHER } });
    // Helm back to the marked image: the marked write was recorded already (a write lands once), so this is helm's.
    helmUpgrade(r, OLD);
    await r.waitFor('the second helm upgrade recorded', async () => (await changes(r)).length === 4);
    expect((await changes(r)).at(-1)).toMatchObject({ payload: { oldImage: HELM, newImage: OLD, planned: false } });

    // Attack 20, F4: a spec change between the write and the first look (kubectl rollout restart, a scale) moved the
    // generation on; the marked write, not recorded yet, is still rollplane's.
    const later = deployment(r);
    const laterArgs: string[] = later.spec.template.spec.containers[0].args;
    laterArgs[laterArgs.indexOf('--image') + 1] = HELM;
    later.metadata.annotations = { ...later.metadata.annotations, [ANNOTATION_IMAGE_SET_FOR]: `ro_another ${HELM} ${(later.metadata.generation ?? 0) - 3}` };
    r.sim.store.update(deploymentType(r), later);
    await r.waitFor('the marked change recorded', async () => (await changes(r)).length === 5);
    expect((await changes(r)).at(-1)).toMatchObject({ rolloutId: 'ro_another', payload: { oldImage: OLD, newImage: HELM, planned: true } });
  });

  it('through a Harvester Addon: the marker is on the Addon, whose values the add-on reconcile renders', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp:addon', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    await r.waitFor('the baseline recorded', async () => {
      const data = await r.gql(`{ events(filter: { types: [UpstreamControllerChanged] }, first: 5) { edges { node { id } } } }`);
      return data.events.edges.length > 0;
    });
    const type = r.sim.store.resourceType(ADDON.group, ADDON.plural)!;
    const addon = structuredClone(r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name)!) as KubeObject;
    addon.spec.valuesContent = 'agent:\n  image:\n    repository: rancher/harvester-vm-dhcp-agent\n    tag: v0.3.1\n';
    addon.metadata.annotations = { ...addon.metadata.annotations, [ANNOTATION_IMAGE_SET_FOR]: `${OTHER} ${NEW} ${(addon.metadata.generation ?? 0) + 1}` };
    r.sim.store.update(type, addon);
    await r.waitFor('the change recorded', async () => (await changes(r)).length === 1);
    expect((await changes(r)).at(-1)).toMatchObject({ rolloutId: OTHER, payload: { oldImage: OLD, newImage: NEW, planned: true, changedThrough: 'addon' } });
  });
});
