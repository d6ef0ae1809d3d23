/**
 * A hold is not a pin (issue 27, gap 1): upstream recreates a missing agent with the controller's current --image,
 * held or not. So at every phase of a rollout — before a pool's release, mid-wave, after success, after a failed
 * canary, after an abort — a held pool's agent is evicted, and the recreated agent must run what the API said
 * beforehand (`recreatedWith`): an image the pool already ran or one a rollout decided for it, or else the API said
 * `exposedTo` it. And a failed canary does not leave the controller on the failed image.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/sim/types.js';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';

const NS = 'harvester-system';
const CONTROLLER = 'harvester-vm-dhcp-controller';
const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
const BAD = 'rancher/harvester-vm-dhcp-agent:bad-v0.3.2';
const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

interface PoolView {
  runningImage: string | null;
  desiredImage: string | null;
  desiredBy: string | null;
  recreatedWith: string | null;
  exposedTo: string | null;
}

async function view(r: Rig, pool: string): Promise<PoolView> {
  return (await r.gql(`{ agentPool(namespace: "default", name: "${pool}") { runningImage desiredImage desiredBy recreatedWith exposedTo } }`)).agentPool;
}

function controllerImage(r: Rig): string {
  const args: string[] = r.sim.store.get(r.sim.store.resourceType('apps', 'deployments')!, NS, CONTROLLER)!.spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

/** The controller's own rolling update is over: every pod of it runs `image` (the old pod no longer leads). */
async function controllerSettled(r: Rig, image: string): Promise<void> {
  await r.waitFor(`the controller's pods on ${image}`, () => {
    const pods = r.sim.store.list(r.sim.store.resourceType('', 'pods')!, NS).filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
    return controllerImage(r) === image && pods.length > 0 && pods.every((p) => p.spec.containers[0].args.includes(image) && !p.metadata.deletionTimestamp);
  });
}

/**
 * Evicts the pool's agent and checks the rule: the new agent runs what the API said it would, and that is the image the
 * pool ran, or one a rollout decided for it, or the API said `exposedTo` it.
 */
async function evict(r: Rig, pool: string): Promise<PoolView & { recreated: string }> {
  const before = await view(r, pool);
  const old = r.agent(pool)!;
  const pods = r.sim.store.resourceType('', 'pods')!;
  // An eviction: a graceful delete (the agent is Terminating first, which is what re-queues its pool upstream).
  r.sim.store.delete(pods, NS, old.metadata.name);
  const recreated = await r.waitFor(`${pool} recreated`, () => {
    const pod = r.readyAgents().get(pool);
    return pod && pod.metadata.uid !== old.metadata.uid ? (pod as KubeObject) : undefined;
  });
  const image: string = recreated.spec.containers[0].image;
  expect(image, `${pool}: recreated with what the API said`).toBe(before.recreatedWith);
  const chosen = before.desiredBy !== null ? before.desiredImage : null;
  if (image === before.runningImage || image === chosen) expect(before.exposedTo, `${pool}: not exposed`).toBeNull();
  else expect(before.exposedTo, `${pool}: exposed, and the API said so`).toBe(image);
  return { ...before, recreated: image };
}

describe('evicting held pools at every phase of a rollout (coexistence)', () => {
  it('before release, mid-wave, after success, after a failed canary, after an abort: every recreated agent runs what the API said', async () => {
    rig = await startRig({ fleet: 'pools=6,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const selected = ['net-1', 'net-2', 'net-3', 'net-4'];

    // 1. Before release: the canary pauses after net-1; net-2 (selected, held) and net-5 (outside, held).
    const a = await r.gql(BUMP, { input: { image: NEW, pools: { names: selected }, strategy: { canary: 1, maxUnavailable: '1' } } });
    const aId = a.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, aId, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    await controllerSettled(r, NEW);
    const pending = await evict(r, 'net-2');
    expect(pending).toMatchObject({ runningImage: OLD, desiredImage: NEW, desiredBy: aId, exposedTo: null, recreated: NEW }); // the rollout chose it
    const outside = await evict(r, 'net-5');
    expect(outside).toMatchObject({ runningImage: OLD, desiredBy: null, exposedTo: NEW, recreated: NEW }); // nobody chose it

    // 2. Mid-wave: resume; while a pool is being replaced, evict one still waiting for its wave.
    await r.gql(`mutation { resumeRollout(id: "${aId}") { state } }`);
    const waiting = await r.waitFor('a pool still held for its wave', async () => {
      const ro = (await r.gql(`{ rollout(id: "${aId}") { targets(state: PENDING) { edges { node { name } } } } }`)).rollout;
      const names = ro.targets.edges.map((e: any) => e.node.name).filter((n: string) => n !== 'net-2');
      return names.length > 0 && (names.at(-1) as string);
    });
    expect(await evict(r, waiting)).toMatchObject({ exposedTo: null, recreated: NEW });
    expect((await waitForRollout(r, aId, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');

    // 3. After success: net-6, outside the selection, held on the old image, is exposed to the new one.
    expect(await evict(r, 'net-6')).toMatchObject({ runningImage: OLD, exposedTo: NEW, recreated: NEW });

    // 4. After a failed canary (autoRollback off, to look at what is left): the controller is back on the previous
    //    image, the canary pool is held on the failed one, and nothing is exposed to the failed image.
    const b = await r.gql(BUMP, { input: { image: BAD, pools: { names: ['net-1', 'net-2', 'net-3'] }, strategy: { canary: 1, autoRollback: false } } });
    const bId = b.bumpAgentImage.rollout.id;
    const failed = await waitForRollout(r, bId, ['FAILED', 'PAUSED', 'SUCCEEDED']);
    expect(failed.state).toBe('FAILED');
    await r.waitFor('the controller back on the previous image', () => controllerImage(r) === NEW);
    await controllerSettled(r, NEW);
    const canary = failed.targets.edges.map((e: any) => e.node).find((t: any) => t.state === 'FAILED').name as string;
    await r.waitFor(`${canary} held again`, () => r.pool(canary)!.metadata.annotations?.[HOLD] !== undefined);
    for (const p of ['net-1', 'net-2', 'net-3', 'net-4', 'net-5', 'net-6']) {
      const v = await view(r, p);
      expect(v.recreatedWith, p).toBe(NEW);
      expect(v.desiredImage, `${p}: a failed rollout's image is never desired`).not.toBe(BAD);
    }
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { edges { node { name desiredVersion runningVersion } } } }`);
    expect(drift.drift.edges.map((e: any) => e.node)).toEqual([{ name: canary, desiredVersion: NEW, runningVersion: BAD }]);
    const untouched = ['net-1', 'net-2', 'net-3'].find((p) => p !== canary)!;
    expect(await evict(r, untouched)).toMatchObject({ exposedTo: null, recreated: NEW });
    expect(await evict(r, canary)).toMatchObject({ desiredImage: NEW, exposedTo: null, recreated: NEW }); // back to what it ran

    // 5. After an abort: released pools keep the new image, the controller stays on it; held pools are exposed to it.
    const d = await r.gql(BUMP, { input: { image: NEWER, pools: { names: ['net-1', 'net-2', 'net-3'] }, strategy: { canary: 1, autoRollback: false } } });
    const dId = d.bumpAgentImage.rollout.id;
    const paused = await waitForRollout(r, dId, ['PAUSED', 'FAILED']);
    expect(paused.state).toBe('PAUSED');
    await r.gql(`mutation { abortRollout(id: "${dId}", reason: "test") { state } }`);
    await waitForRollout(r, dId, ['ABORTED']);
    await controllerSettled(r, NEWER);
    const cancelled = paused.targets.edges.map((e: any) => e.node).find((t: any) => t.state === 'PENDING').name as string;
    expect(await evict(r, cancelled)).toMatchObject({ runningImage: NEW, desiredImage: NEW, exposedTo: NEWER, recreated: NEWER });
  });

  it('a failed canary rolls back by itself (autoRollback on by default): pools and controller back on the previous image', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: BAD, strategy: { canary: 1 } } });
    expect(data.bumpAgentImage.rollout.strategy.autoRollback).toBe(true);
    const id = data.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, id, ['ROLLED_BACK'], 60_000)).state).toBe('ROLLED_BACK');
    await controllerSettled(r, OLD);
    for (const p of ['net-1', 'net-2', 'net-3']) {
      await r.waitFor(`${p} on the previous image, unheld`, () => {
        const pod = r.readyAgents().get(p);
        return pod?.spec.containers[0].image === OLD && r.pool(p)!.metadata.annotations?.[HOLD] === undefined;
      });
      expect(await view(r, p)).toMatchObject({ desiredImage: OLD, runningImage: OLD, recreatedWith: OLD, exposedTo: null });
    }
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { totalCount } }`);
    expect(drift.drift.totalCount).toBe(0);
  });
});
