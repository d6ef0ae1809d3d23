/**
 * A rollback of a target whose pool never moved (attack 20, F2): the original released the pool, but before upstream
 * acted on it a hold came back (an operator's here; a late hold write of rollplane's in the attack, which the hold
 * writes' precondition now refuses). The original's recreation intent for that pool names a recreation that will not
 * come; the rollback, whose target already runs its image, waited for it until its deadline and failed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD } from '../../../src/kinds/agentPool/controller/names.js';
import type { ApiRequestInfo, KubeObject } from '../../../src/sim/types.js';
import { BUMP, CONTROLLER, NEW, OLD, type Rig, startRig, waitForRollout } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function controllerImage(r: Rig): string {
  const type = r.sim.store.resourceType('apps', 'deployments')!;
  const args: string[] = (r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name) as KubeObject).spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

describe('an automatic rollback of a target whose pool never moved', () => {
  it('succeeds at once instead of waiting for the recreation the original announced', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const type = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    // The original's first release (the first IPPool patch once the controller deploys the new image): an operator's
    // hold lands on that pool just before it.
    let operatorHeld: string | undefined;
    const earlier = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await earlier?.(info);
        const write = info.verb === 'patch' && info.resource.plural === 'ippools' && !info.subresource && !info.dryRun;
        if (!write || operatorHeld || controllerImage(r) !== NEW || !info.name) return;
        operatorHeld = info.name;
        const pool = structuredClone(r.pool(info.name)!);
        pool.metadata.annotations = { ...pool.metadata.annotations, [ANNOTATION_HOLD]: 'maintenance' };
        r.sim.store.update(type, pool);
      },
    };
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 30 } } });
    const id: string = data.bumpAgentImage.rollout.id;
    await waitForRollout(r, id, ['FAILED', 'ROLLED_BACK'], 90_000);
    expect(operatorHeld).toBeDefined();
    // The operator's hold stayed (rollplane took only its marker off), and the pool kept its agent.
    expect(r.pool(operatorHeld!)?.metadata.annotations?.[ANNOTATION_HOLD]).toBe('maintenance');
    expect(r.pool(operatorHeld!)?.metadata.annotations?.[ANNOTATION_HELD_BY]).toBeUndefined();
    expect(r.agent(operatorHeld!)?.spec.containers[0].image).toBe(OLD);
    const rollback = await r.waitFor(
      'the automatic rollback ended',
      async () => {
        const list = await r.gql(`{ rollouts(filter: { kind: AGENT_POOL }) { edges { node { id state message rollbackOf { id } } } } }`);
        const found = list.rollouts.edges.map((e: any) => e.node).find((n: any) => n.rollbackOf?.id === id);
        return found && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(found.state) ? found : undefined;
      },
      90_000,
    );
    // Without the fix: it waited "recording the recreation" for its 30 s deadline and FAILED; the original stayed FAILED.
    expect(rollback.state, rollback.message).toBe('SUCCEEDED');
    expect((await waitForRollout(r, id, ['ROLLED_BACK'], 30_000)).state).toBe('ROLLED_BACK');
    expect(controllerImage(r)).toBe(OLD);

    // The operator lifts the hold; the next bump's recreation of that pool is dated from its own release, not from the
    // original's (attack 21, F3: the old intent's release time was kept, and the history showed the agent down for it).
    const pool = structuredClone(r.pool(operatorHeld!)!);
    delete pool.metadata.annotations![ANNOTATION_HOLD];
    r.sim.store.update(type, pool);
    await r.waitFor('rollplane sees the hold lifted', async () => {
      const pools = await r.gql(`{ agentPools { edges { node { name held } } } }`);
      return pools.agentPools.edges.some((e: any) => e.node.name === operatorHeld && !e.node.held);
    });
    const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    const launched = Date.now();
    const next = await r.gql(BUMP, { input: { image: NEWER, strategy: { maxUnavailable: '1' } } });
    expect((await waitForRollout(r, next.bumpAgentImage.rollout.id, ['SUCCEEDED'], 60_000)).state).toBe('SUCCEEDED');
    const events = await r.gql(`{ events(filter: { types: [AgentRecreated] }, first: 50) { edges { node { rolloutId object { name } payload } } } }`);
    const recreation = events.events.edges
      .map((e: any) => e.node)
      .find((e: any) => e.rolloutId === next.bumpAgentImage.rollout.id && e.object.name === operatorHeld);
    expect(recreation, JSON.stringify(events.events.edges)).toBeDefined();
    expect(Date.parse(recreation.payload.deletedAt)).toBeGreaterThanOrEqual(launched);
  });

  // Attack 20, F2, its end: the failed rollback put the controller back on "the image before it", which was the image
  // its original had failed on, and held every pool against the good one.
  it('a rollback that fails leaves the controller on the image it rolled back to', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const type = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const operatorHold = (name: string) => {
      const pool = structuredClone(r.pool(name)!);
      pool.metadata.annotations = { ...pool.metadata.annotations, [ANNOTATION_HOLD]: 'maintenance' };
      r.sim.store.update(type, pool);
    };
    // The original releases a first pool (it moves), then an operator holds the second just before its release: the
    // original fails. Its rollback's release of the first pool meets an operator's hold too: the rollback fails.
    const released: string[] = [];
    let rolledBackHeld = false;
    const earlier = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await earlier?.(info);
        const write = info.verb === 'patch' && info.resource.plural === 'ippools' && !info.subresource && !info.dryRun && !!info.name;
        if (!write) return;
        if (controllerImage(r) === NEW && released.length < 2 && !released.includes(info.name!)) {
          released.push(info.name!);
          if (released.length === 2) operatorHold(info.name!);
        } else if (controllerImage(r) === OLD && released.length === 2 && info.name === released[0] && !rolledBackHeld) {
          rolledBackHeld = true;
          operatorHold(info.name!);
        }
      },
    };
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 60 } } });
    const id: string = data.bumpAgentImage.rollout.id;
    await waitForRollout(r, id, ['FAILED', 'ROLLED_BACK'], 90_000);
    const rollback = await r.waitFor(
      'the automatic rollback ended',
      async () => {
        const list = await r.gql(`{ rollouts(filter: { kind: AGENT_POOL }) { edges { node { id state message rollbackOf { id } } } } }`);
        const found = list.rollouts.edges.map((e: any) => e.node).find((n: any) => n.rollbackOf?.id === id);
        return found && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(found.state) ? found : undefined;
      },
      90_000,
    );
    expect(rolledBackHeld).toBe(true);
    expect(rollback.state, rollback.message).toBe('FAILED');
    expect(rollback.message).toMatch(/pool is held/);
    // Its finish ran: the holds of rollplane's on pools that run the controller's image came off.
    await r.waitFor('rollplane holds nothing back', () =>
      ['net-1', 'net-2', 'net-3'].every(
        (name) => r.pool(name)?.metadata.annotations?.[ANNOTATION_HELD_BY] === undefined || r.agent(name)?.spec.containers[0].image !== OLD,
      ),
    );
    // Without the fix: NEW, the original's failed image, with every pool on OLD held against it.
    expect(controllerImage(r)).toBe(OLD);
    expect(r.agent(released[0]!)?.spec.containers[0].image).toBe(NEW);
    expect(r.agent(released[1]!)?.spec.containers[0].image).toBe(OLD);
  });
});

// Attack 21, F2: a bump over pools on two images (an earlier rollout moved some) failed; its automatic rollback was
// refused at once ("asks for more than one image"), leaving the controller on the failed image.
describe('an automatic rollback of a bump that started from two images', () => {
  it('goes back to the one image its changed targets ran, and the controller with it', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1'] }, strategy: { maxUnavailable: '1' } } });
    expect((await waitForRollout(r, first.bumpAgentImage.rollout.id, ['SUCCEEDED'], 60_000)).state).toBe('SUCCEEDED');
    const BAD = 'rancher/harvester-vm-dhcp-agent:bad-v0.3.9';
    const bad = await r.gql(BUMP, { input: { image: BAD, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 60 } } });
    expect(bad.bumpAgentImage.rollout.fromVersion).toBeNull(); // net-1 on NEW, the others on OLD
    const id: string = bad.bumpAgentImage.rollout.id;
    // Without the fix: FAILED for good, its rollback refused "asks for more than one image", the controller on BAD.
    const ended = await waitForRollout(r, id, ['ROLLED_BACK'], 90_000);
    expect(ended.state).toBe('ROLLED_BACK');
    await r.waitFor('the controller back off the failed image', () => controllerImage(r) !== BAD);
    await r.waitFor('every agent off the failed image', () =>
      ['net-1', 'net-2', 'net-3'].every(
        (name) => r.readyAgents().get(name)?.spec.containers[0].image !== undefined && r.agent(name)?.spec.containers[0].image !== BAD,
      ),
    );
    expect(r.agent('net-1')?.spec.containers[0].image).toBe(NEW);
  });
});

// Attack 22, G1: a bump whose changed targets came from two images failed; no rollback can take them back (each
// group has its own image), and nothing backed the controller out either: it stayed on the failed image.
describe('a failed bump whose changed targets came from two images', () => {
  it('puts the controller back on the image it deployed when the bump started', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1'] }, strategy: { maxUnavailable: '1' } } });
    expect((await waitForRollout(r, first.bumpAgentImage.rollout.id, ['SUCCEEDED'], 60_000)).state).toBe('SUCCEEDED');
    const BAD = 'rancher/harvester-vm-dhcp-agent:bad-v0.4.0';
    const bad = await r.gql(BUMP, { input: { image: BAD, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 60 } } });
    const id: string = bad.bumpAgentImage.rollout.id;
    const ended = await waitForRollout(r, id, ['FAILED', 'ROLLED_BACK'], 90_000);
    // Without the fix: the controller stays on BAD for good.
    await r.waitFor(`the controller off the failed image (the rollout ${ended.state}: ${ended.message})`, () => controllerImage(r) !== BAD, 60_000);
    expect(controllerImage(r)).toBe(NEW);
  });
});
