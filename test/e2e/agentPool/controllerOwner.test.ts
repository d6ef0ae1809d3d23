/**
 * The owner of the agent image (issue 27, gaps 2): beside a vm-dhcp-controller that Harvester installed as an Addon,
 * a rollout changes the Addon's valuesContent and the add-on reconcile renders --image; a later add-on upgrade that
 * resets the value is a revert made outside rollplane: drift (what the rollout decided is still desired), an event
 * naming both images, and the rollout's detail says so. A Helm release without an Addon is detected and named.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';

const NS = 'harvester-system';
const CONTROLLER = 'harvester-vm-dhcp-controller';
const ADDON = { group: 'harvesterhci.io', plural: 'addons' };

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function controllerImage(r: Rig): string {
  const args: string[] = r.sim.store.get(r.sim.store.resourceType('apps', 'deployments')!, NS, CONTROLLER)!.spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}
const addon = (r: Rig) => r.sim.store.get(r.sim.store.resourceType(ADDON.group, ADDON.plural)!, NS, CONTROLLER)!;

async function controllerEvents(r: Rig): Promise<any[]> {
  const data = await r.gql(`{ events(filter: { types: [UpstreamControllerChanged] }, first: 50) { edges { node { rolloutId createdAt payload } } } }`);
  // The controller's first-seen image is the history's baseline, not a change (outsideChangeBeforeOwnWrite.test.ts).
  return data.events.edges.map((e: any) => e.node).filter((e: any) => e.payload.firstSeen !== true);
}

describe('the owner of the agent image', () => {
  it('a Harvester Addon: the rollout changes its valuesContent; an add-on upgrade that resets it is drift, an event and part of the rollout', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=2,upstream=vm-dhcp:addon', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } });
    const id = data.bumpAgentImage.rollout.id;
    const done = await waitForRollout(r, id, ['SUCCEEDED', 'FAILED']);
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    // Through the owner: the Addon's values name the new image, and its reconcile rendered --image from them.
    expect(addon(r).spec.valuesContent).toBe('agent:\n  image:\n    repository: rancher/harvester-vm-dhcp-agent\n    tag: v0.3.1\n');
    expect(controllerImage(r)).toBe(NEW);
    for (const p of ['net-1', 'net-2', 'net-3']) expect(r.agent(p)!.spec.containers[0].image, p).toBe(NEW);
    await r.waitFor('the planned change recorded', async () => (await controllerEvents(r)).length === 1);
    expect((await controllerEvents(r))[0]).toMatchObject({
      rolloutId: id,
      payload: { oldImage: OLD, newImage: NEW, planned: true, changedThrough: 'addon', owner: `the Harvester Addon ${NS}/${CONTROLLER}` },
    });

    // Harvester's upgrade_addon: a merge patch of spec.version and spec.valuesContent from the release's add-on file.
    const type = r.sim.store.resourceType(ADDON.group, ADDON.plural)!;
    r.sim.store.update(type, { ...structuredClone(addon(r)), spec: { ...addon(r).spec, version: '0.3.0', valuesContent: '' } });
    await r.waitFor('every pool back on the chart default', () =>
      ['net-1', 'net-2', 'net-3'].every((p) => r.readyAgents().get(p)?.spec.containers[0].image === OLD),
    );
    await r.waitFor('the revert recorded', async () => (await controllerEvents(r)).length === 2);
    const revert = (await controllerEvents(r)).find((e) => e.payload.planned === false);
    expect(revert).toMatchObject({
      rolloutId: id,
      payload: { oldImage: NEW, newImage: OLD, planned: false, reverts: id, owner: `the Harvester Addon ${NS}/${CONTROLLER}` },
    });
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { edges { node { name desiredVersion runningVersion desiredBy } } } }`);
    expect(drift.drift.edges.map((e: any) => e.node)).toEqual(
      ['net-1', 'net-2', 'net-3'].map((name) => ({ name, desiredVersion: NEW, runningVersion: OLD, desiredBy: id })),
    );
    const detail = await r.gql(`{ rollout(id: "${id}") { state revertedOutsideRollplane { at fromVersion toVersion owner } } }`);
    expect(detail.rollout.state).toBe('SUCCEEDED');
    expect(detail.rollout.revertedOutsideRollplane).toEqual([
      { at: revert.createdAt, fromVersion: NEW, toVersion: OLD, owner: `the Harvester Addon ${NS}/${CONTROLLER}` },
    ]);
  });

  it('a Helm release without an Addon: detected and named; the Deployment is patched (rollplane cannot run helm)', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW } });
    const id = data.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    await r.waitFor('the planned change recorded', async () => (await controllerEvents(r)).length === 1);
    expect((await controllerEvents(r))[0]).toMatchObject({
      rolloutId: id,
      payload: { planned: true, changedThrough: 'deployment', owner: `the Helm release ${NS}/${CONTROLLER}` },
    });
  });
});
