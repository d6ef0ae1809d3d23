/**
 * Agent-pool rollouts beside harvester/vm-dhcp-controller (docs/adr/0017): the simulator runs upstream's IPPool
 * controller (fleet option upstream=vm-dhcp), rollplane runs for real over HTTP, and the test watches the simulated
 * cluster at every store event.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../../src/sim/index.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { BUMP, CONTROLLER, helmUpgrade, type MemberRig, NEW, OLD, startMemberRig, startRig, waitForRollout, type Rig } from './rig.js';

const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
const OTHER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function controllerImage(r: Pick<Rig, 'sim'>): string {
  const d = r.sim.store.get(r.sim.store.resourceType('apps', 'deployments')!, CONTROLLER.namespace, CONTROLLER.name)!;
  const args: string[] = d.spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

/** The "helm upgrade": someone else sets the controller's --image. */
/** At every store event: which agent uids each pool had, and how many of `selected` lacked a Ready agent (worst). */
function watchAgents(r: Rig, selected: string[]) {
  const uids = new Map<string, Set<string>>();
  const pods = r.sim.store.resourceType('', 'pods')!;
  let worst = 0;
  const sample = () => {
    for (const pod of r.sim.store.list(pods, 'harvester-system')) {
      const pool = pod.metadata.labels?.['network.harvesterhci.io/ippool-name'];
      if (!pool) continue;
      if (!uids.has(pool)) uids.set(pool, new Set());
      uids.get(pool)!.add(pod.metadata.uid!);
    }
    const ready = r.readyAgents();
    worst = Math.max(worst, selected.filter((p) => !ready.has(p)).length);
  };
  sample();
  const unsubscribe = r.sim.store.subscribe(sample);
  return { uids, worst: () => worst, stop: unsubscribe };
}

async function agentEvents(r: Rig): Promise<any[]> {
  const data = await r.gql(
    `{ events(filter: { types: [AgentRecreated, UpstreamControllerChanged] }, first: 500) { edges { node { type rolloutId object { namespace name } payload } } } }`,
  );
  // The controller's first-seen image is the history's baseline, not a change (outsideChangeBeforeOwnWrite.test.ts).
  return data.events.edges.map((e: any) => e.node).filter((e: any) => e.payload.firstSeen !== true);
}

const names = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `net-${from + i}`);

describe('agent-pool rollouts beside the vm-dhcp-controller (coexistence)', () => {
  it("rolls 20 of 24 pools with maxUnavailable 2 through the controller's own --image: each selected agent recreated once, the others untouched", async () => {
    rig = await startRig({ fleet: 'pools=24,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const selected = names(1, 20);
    const outside = names(21, 24);
    const before = new Map(names(1, 24).map((p) => [p, r.agent(p)!.metadata.uid!]));
    const writesBefore = { ...r.writes };
    const watch = watchAgents(r, selected);

    const data = await r.gql(BUMP, { input: { image: NEW, pools: { names: selected }, strategy: { maxUnavailable: '2' } } });
    expect(data.bumpAgentImage.plan.filter((p: any) => p.action === 'change')).toHaveLength(20);
    const done = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'], 60_000);
    watch.stop();
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    expect(done.progress).toMatchObject({ total: 20, succeeded: 20 });

    expect(watch.worst()).toBeGreaterThan(0);
    expect(watch.worst()).toBeLessThanOrEqual(2);
    expect(controllerImage(r)).toBe(NEW);
    for (const p of selected) {
      const pod = r.agent(p)!;
      expect(pod.spec.containers[0].image, p).toBe(NEW);
      expect(r.pool(p)!.status.agentPodRef).toMatchObject({ image: NEW, uid: pod.metadata.uid });
      // Exactly once: the old agent and one new one, nothing in between.
      expect([...watch.uids.get(p)!], p).toEqual([before.get(p), pod.metadata.uid]);
      expect(r.pool(p)!.metadata.annotations?.[HOLD], p).toBeUndefined();
    }
    for (const p of outside) {
      expect([...watch.uids.get(p)!], p).toEqual([before.get(p)]);
      expect(r.agent(p)!.spec.containers[0].image).toBe(OLD);
      expect(r.pool(p)!.metadata.annotations?.[HOLD], p).toBeDefined();
    }
    // rollplane wrote no agentPodRef, created and deleted no agent: upstream did (in-process, not over HTTP).
    expect(r.writes.update - writesBefore.update).toBe(0);
    expect(r.writes.create - writesBefore.create).toBe(0);
    expect(r.writes.delete - writesBefore.delete).toBe(0);

    const events = await agentEvents(r);
    const recreated = events.filter((e) => e.type === 'AgentRecreated');
    expect(recreated).toHaveLength(20);
    for (const e of recreated) expect(e).toMatchObject({ rolloutId: done.id, payload: { oldImage: OLD, newImage: NEW, reason: 'rollout' } });
    expect(events.filter((e) => e.type === 'UpstreamControllerChanged')).toEqual([
      expect.objectContaining({ payload: expect.objectContaining({ oldImage: OLD, newImage: NEW, planned: true }) }),
    ]);
    // The pools outside the selection stay behind, held, and the drift query says so.
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { edges { node { name desiredVersion runningVersion } } } }`);
    expect(drift.drift.edges.map((e: any) => e.node).sort((a: any, b: any) => a.name.localeCompare(b.name))).toEqual(
      outside.map((name) => ({ name, desiredVersion: NEW, runningVersion: OLD })).sort((a, b) => a.name.localeCompare(b.name)),
    );
    const view = await r.gql(`{ a: agentPool(namespace: "default", name: "net-21") { held heldByRollplane mode desiredImage runningImage }
      b: agentPool(namespace: "default", name: "net-1") { held heldByRollplane mode desiredImage runningImage } }`);
    expect(view.a).toEqual({ held: false, heldByRollplane: true, mode: 'COEXIST', desiredImage: NEW, runningImage: OLD });
    expect(view.b).toEqual({ held: false, heldByRollplane: false, mode: 'COEXIST', desiredImage: NEW, runningImage: NEW });
  });

  it('pause and abort stop the releases; rollback holds, sets --image back and releases in waves', async () => {
    rig = await startRig({ fleet: 'pools=8,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const all = names(1, 8);
    const before = new Map(all.map((p) => [p, r.agent(p)!.metadata.uid!]));
    const watch = watchAgents(r, all);

    // Canary 2 pauses the rollout after two pools: nothing else is released while it is paused.
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', canary: 2 } } });
    const id = data.bumpAgentImage.rollout.id;
    const paused = await waitForRollout(r, id, ['PAUSED', 'FAILED']);
    expect(paused.state, paused.message ?? '').toBe('PAUSED');
    const pendingWhilePaused = paused.targets.edges.map((e: any) => e.node).filter((t: any) => t.state === 'PENDING');
    expect(pendingWhilePaused).toHaveLength(6);
    for (const t of pendingWhilePaused) {
      expect(r.pool(t.name)!.metadata.annotations?.[HOLD], t.name).toBeDefined();
      expect(r.agent(t.name)!.spec.containers[0].image).toBe(OLD);
    }

    const upgradedCount = () => all.filter((p) => r.agent(p)?.spec.containers[0].image === NEW && r.readyAgents().has(p)).length;
    // Resume, pause by hand once a third pool is done: the pools not yet released stay held on the old image.
    await r.gql(`mutation { resumeRollout(id: "${id}") { state } }`);
    await r.waitFor('a third pool upgraded', () => upgradedCount() >= 3);
    await r.gql(`mutation { pauseRollout(id: "${id}", reason: "test") { state } }`);
    await r.waitFor('paused with nothing in flight', async () => {
      const ro = (await r.gql(`{ rollout(id: "${id}") { state progress { progressing } } }`)).rollout;
      return ro.state === 'PAUSED' && ro.progress.progressing === 0;
    });
    const pausedAgain = await waitForRollout(r, id, ['PAUSED']);
    for (const t of pausedAgain.targets.edges.map((e: any) => e.node).filter((t: any) => t.state === 'PENDING')) {
      expect(r.pool(t.name)!.metadata.annotations?.[HOLD], t.name).toBeDefined();
      expect(r.agent(t.name)!.spec.containers[0].image, t.name).toBe(OLD);
    }
    // Resume, then abort once a fifth pool is done.
    await r.gql(`mutation { resumeRollout(id: "${id}") { state } }`);
    await r.waitFor('a fifth pool upgraded', () => upgradedCount() >= 5);
    await r.gql(`mutation { abortRollout(id: "${id}", reason: "test") { state } }`);
    const aborted = await waitForRollout(r, id, ['ABORTED']);
    const unreleased = aborted.targets.edges
      .map((e: any) => e.node)
      .filter((t: any) => t.state === 'CANCELLED')
      .map((t: any) => t.name);
    expect(unreleased.length).toBeGreaterThan(0);
    await r.waitFor(
      'admitted targets finished',
      async () => (await r.gql(`{ rollout(id: "${id}") { progress { progressing } } }`)).rollout.progress.progressing === 0,
    );
    for (const p of unreleased) {
      expect(r.pool(p)!.metadata.annotations?.[HOLD], p).toBeDefined();
      expect([...watch.uids.get(p)!], p).toEqual([before.get(p)]);
    }
    const upgraded = all.filter((p) => !unreleased.includes(p));

    // Rollback: the upgraded pools go back to the old image, one wave at a time, through the controller again.
    const rollback = await r.gql(`mutation { rollbackRollout(id: "${id}") { id } }`);
    const back = await waitForRollout(r, rollback.rollbackRollout.id, ['SUCCEEDED', 'FAILED'], 30_000);
    watch.stop();
    expect(back.state, back.message ?? '').toBe('SUCCEEDED');
    expect(controllerImage(r)).toBe(OLD);
    expect(watch.worst()).toBeLessThanOrEqual(1);
    for (const p of all) {
      expect(r.agent(p)!.spec.containers[0].image, p).toBe(OLD);
      // Back on the controller's image: no hold is left (finish releases holds that hold nothing back).
      await r.waitFor(`hold of ${p} released`, () => r.pool(p)!.metadata.annotations?.[HOLD] === undefined);
    }
    for (const p of upgraded) expect(watch.uids.get(p)!.size, p).toBe(3); // old, new, old again
    for (const p of unreleased) expect(watch.uids.get(p)!.size, p).toBe(1);
    const events = await agentEvents(r);
    expect(events.filter((e) => e.type === 'AgentRecreated' && e.payload.reason === 'unplanned')).toEqual([]);
    expect(events.filter((e) => e.type === 'AgentRecreated' && e.rolloutId === rollback.rollbackRollout.id)).toHaveLength(upgraded.length);
  });

  // Attack probe (ap-user-hold-during): an operator's hold written over rollplane's mid-rollout was taken off, and the
  // pool upgraded anyway.
  it("keeps an operator's hold written over rollplane's mid-rollout: that pool is not released and its agent stays", async () => {
    rig = await startRig({ fleet: 'pools=4,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', canary: 1 } } });
    const id = data.bumpAgentImage.rollout.id;
    const paused = await waitForRollout(r, id, ['PAUSED', 'FAILED']);
    expect(paused.state, paused.message ?? '').toBe('PAUSED');
    const frozen = paused.targets.edges.map((e: any) => e.node).find((t: any) => t.state === 'PENDING').name as string;
    const uid = r.agent(frozen)!.metadata.uid;
    const pools = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const pool = structuredClone(r.pool(frozen)!) as KubeObject;
    pool.metadata.annotations = { ...pool.metadata.annotations, [HOLD]: 'operator-freeze' };
    r.sim.store.update(pools, pool);
    await r.gql(`mutation { resumeRollout(id: "${id}") { state } }`);
    const done = await waitForRollout(r, id, ['SUCCEEDED', 'FAILED']);
    const target = done.targets.edges.map((e: any) => e.node).find((t: any) => t.name === frozen);
    expect(target.state).toBe('FAILED');
    expect(r.pool(frozen)!.metadata.annotations?.[HOLD]).toBe('operator-freeze');
    expect(r.agent(frozen)!.metadata.uid).toBe(uid);
    expect(r.agent(frozen)!.spec.containers[0].image).toBe(OLD);
  });

  // Attack finding F2 (three replicas): two bumps of disjoint pools to different images were both accepted; the second
  // moved the controller's one --image under the first, which failed blaming "a change outside rollplane".
  it('refuses a bump to another image while a rollout moves the controller, even of other pools; the same image may run beside it', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1', 'net-2'] }, strategy: { maxUnavailable: '1', canary: 1 } } });
    const id = first.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, id, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    const other = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
    const refused = (await r.gql(BUMP, { input: { image: other, pools: { names: ['net-3'] } } }).catch((error: { errors: any[] }) => error)) as {
      errors?: { message: string; extensions?: { code?: string } }[];
    };
    expect(refused.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(refused.errors?.[0]?.message).toBe(
      `in cluster local the vm-dhcp-controller runs one --image for every pool, and active rollout ${id} is moving it to ${NEW}; wait for it, or abort it first`,
    );
    expect(controllerImage(r)).toBe(NEW);
    const rollouts = await r.gql('{ rollouts(first: 10) { totalCount } }');
    expect(rollouts.rollouts.totalCount).toBe(1);
    // The same image moves nothing under the first rollout.
    const beside = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-3'] } } });
    expect(beside.bumpAgentImage.created).toBe(true);
    expect((await waitForRollout(r, beside.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
  });

  // Second attack (D, A/C): a supersede to another image was refused by the one-image rule, while a rollback to another
  // image was let through and broke the active rollout. Now a supersede takes its predecessor over, and a rollback is
  // held to the rule like a bump.
  it('lets a supersede to another image replace the active rollout, and refuses a rollback to another image while one is active', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const done = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1'] } } });
    const doneId = done.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, doneId, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const newer = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
    const first = await r.gql(BUMP, { input: { image: newer, pools: { names: ['net-2', 'net-3'] }, strategy: { maxUnavailable: '1', canary: 1 } } });
    const firstId = first.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, firstId, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    // Rolling the finished one back would move the controller to OLD under the paused one.
    const refused = (await r.gql(`mutation { rollbackRollout(id: "${doneId}") { id } }`).catch((error: { errors: unknown[] }) => error)) as {
      errors?: { message: string; extensions?: { code?: string } }[];
    };
    expect(refused.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(refused.errors?.[0]?.message).toBe(
      `in cluster local the vm-dhcp-controller runs one --image for every pool, and active rollout ${firstId} is moving it to ${newer}; wait for it, or abort it first`,
    );
    expect((await r.gql(`{ rollout(id: "${firstId}") { state } }`)).rollout.state).toBe('PAUSED');
    // A supersede of the same pools to yet another image replaces it.
    const latest = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    const replaced = await r.gql(BUMP, { input: { image: latest, pools: { names: ['net-2', 'net-3'] }, supersede: true } });
    expect(replaced.bumpAgentImage.created).toBe(true);
    expect((await r.gql(`{ rollout(id: "${firstId}") { state message } }`)).rollout).toEqual({ state: 'ABORTED', message: 'superseded by a newer rollout' });
    expect((await waitForRollout(r, replaced.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    for (const pool of ['net-2', 'net-3']) expect(r.agent(pool)!.spec.containers[0].image, pool).toBe(latest);
  });

  // A supersede takes over a pool the old rollout was still moving: the old rollout's target fails, and says who took
  // it over (it used to blame "a change outside rollplane", as for a helm upgrade).
  it('a pool taken over mid-change by a supersede fails in the old rollout naming the new one, not an outside change', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 1500, podTerminateMs: 10 } });
    const r = rig;
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1', 'net-2'] }, strategy: { maxUnavailable: '1' } } });
    const firstId = first.bumpAgentImage.rollout.id;
    await r.waitFor(
      'a pool of the first rollout changing',
      async () => (await r.gql(`{ rollout(id: "${firstId}") { targets(state: PROGRESSING) { totalCount } } }`)).rollout.targets.totalCount === 1,
    );
    const second = await r.gql(BUMP, { input: { image: OTHER, pools: { names: ['net-1', 'net-2'] }, supersede: true } });
    const secondId = second.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, secondId, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const old = await r.gql(`{ rollout(id: "${firstId}") { state targets(state: FAILED) { edges { node { name error } } } } }`);
    expect(old.rollout.state).toBe('ABORTED');
    const failed = old.rollout.targets.edges.map((e: any) => e.node);
    expect(failed).toHaveLength(1);
    expect(failed[0].error).toContain(`taken over by rollout ${secondId}`);
    expect(failed[0].error).not.toContain('outside rollplane');
  });

  // Attack finding F7: a rollback of pools that ran different images was accepted, aborted the original, then stayed
  // PENDING for its whole deadline (it cannot run beside a controller with one --image), the reason only in the log.
  it('refuses a rollback that would return pools to different images, before aborting anything', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1'] } } });
    expect((await waitForRollout(r, first.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    // net-1 runs NEW, net-2 and net-3 OLD: the second rollout starts from both, and pauses after changing two.
    const newer = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
    const second = await r.gql(BUMP, { input: { image: newer, pools: { names: ['net-1', 'net-2', 'net-3'] }, strategy: { maxUnavailable: '1', canary: 2 } } });
    const id = second.bumpAgentImage.rollout.id;
    const paused = await waitForRollout(r, id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
    expect(paused.state, paused.message ?? '').toBe('PAUSED');
    const refused = (await r.gql(`mutation { rollbackRollout(id: "${id}") { id } }`).catch((error: { errors: unknown[] }) => error)) as {
      errors?: { message: string; extensions?: { code?: string } }[];
    };
    expect(refused.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(refused.errors?.[0]?.message).toBe(
      `rollout ${id} changed pools that ran different images before (${OLD}, ${NEW}); the vm-dhcp-controller deploys one --image, so a rollback cannot return each pool to its own: bump each group back with bumpAgentImage`,
    );
    // Nothing changed: the original is still paused, and no rollback exists.
    const after = await r.gql(`{ rollout(id: "${id}") { state } rollouts(first: 10) { totalCount } }`);
    expect(after.rollout.state).toBe('PAUSED');
    expect(after.rollouts.totalCount).toBe(2);
  });

  // Attack probe (ap-abort-immediately): an abort before any pool was released left the controller on the aborted
  // image with every pool held against it, and a rollback was refused (no target changed).
  it('an abort before any pool was released puts the controller back and takes the holds off', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const before = new Map(names(1, 3).map((p) => [p, r.agent(p)!.metadata.uid!]));
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', canary: 1 } } });
    const id = data.bumpAgentImage.rollout.id;
    await r.gql(`mutation { abortRollout(id: "${id}", reason: "test") { state } }`);
    await waitForRollout(r, id, ['ABORTED']);
    await r.waitFor(
      'the controller back on the old image and no hold left',
      () => controllerImage(r) === OLD && names(1, 3).every((p) => r.pool(p)!.metadata.annotations?.[HOLD] === undefined),
    );
    for (const [p, uid] of before) expect(r.agent(p)!.metadata.uid, p).toBe(uid);
  });

  // Attack probe (minor): scaling the controller to 0 mid-rollout failed the rollout with a message that said "no-agent".
  it('a controller scaled to 0 mid-rollout fails the rollout, saying so; its pools stay held', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', canary: 1 } } });
    const id = data.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, id, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    const type = r.sim.store.resourceType('apps', 'deployments')!;
    const d = structuredClone(r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name)!) as KubeObject;
    d.spec.replicas = 0;
    r.sim.store.update(type, d);
    await r.gql(`mutation { resumeRollout(id: "${id}") { state } }`);
    const failed = await waitForRollout(r, id, ['FAILED', 'SUCCEEDED']);
    expect(failed.state).toBe('FAILED');
    expect(failed.message).toMatch(/no longer deploys agents \(.*scaled to 0\)/);
  });

  it('a helm upgrade of the controller during a rollout fails the rollout, records the change and its recreations as unplanned', async () => {
    rig = await startRig({ fleet: 'pools=6,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 150, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } });
    const id = data.bumpAgentImage.rollout.id;
    await r.waitFor('one pool upgraded', async () => (await r.gql(`{ rollout(id: "${id}") { progress { succeeded } } }`)).rollout.progress.succeeded >= 1);

    helmUpgrade(r, OTHER);
    const failed = await waitForRollout(r, id, ['FAILED', 'SUCCEEDED'], 30_000);
    expect(failed.state).toBe('FAILED');
    expect(failed.message).toContain('changed outside rollplane');
    // Upstream replaces every unheld agent with the helm-upgraded image; none of that is the rollout's.
    const released = failed.targets.edges
      .map((e: any) => e.node)
      .filter((t: any) => t.state === 'SUCCEEDED' || t.state === 'FAILED')
      .map((t: any) => t.name);
    await r.waitFor('released pools on the helm image', () =>
      released.every((p: string) => r.agent(p)?.spec.containers[0].image === OTHER && r.readyAgents().has(p)),
    );
    await r.waitFor(
      'unplanned recreations recorded',
      async () => (await agentEvents(r)).filter((e) => e.payload.reason === 'unplanned').length >= released.length,
    );
    const events = await agentEvents(r);
    for (const e of events.filter((e) => e.type === 'AgentRecreated' && e.rolloutId === id)) expect(e.payload.newImage).toBe(NEW);
    for (const e of events.filter((e) => e.type === 'AgentRecreated' && e.payload.newImage === OTHER))
      expect(e).toMatchObject({ rolloutId: null, payload: { reason: 'unplanned', planned: false } });
    expect(events.find((e) => e.type === 'UpstreamControllerChanged' && e.payload.newImage === OTHER)).toMatchObject({
      payload: { oldImage: NEW, planned: false },
    });
    const succeeded = failed.targets.edges.map((e: any) => e.node).filter((t: any) => t.state === 'SUCCEEDED');
    for (const t of succeeded)
      expect(events.some((e) => e.type === 'AgentRecreated' && e.rolloutId === id && e.object.name === t.name && e.payload.newImage === NEW)).toBe(true);
    // The pools still held show up as drift against the controller's new image, and the API says a recreated agent
    // would get it (issue 27: exposedTo). The pools the failed rollout had moved desire what they ran before it (a
    // failed rollout's image is never desired) and run the helm image: drift too.
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { edges { node { name desiredVersion runningVersion } } } }`);
    const held = names(1, 6).filter((p) => r.pool(p)!.metadata.annotations?.[HOLD] !== undefined);
    expect(held.length).toBeGreaterThan(0);
    for (const p of held) {
      expect(drift.drift.edges.map((e: any) => e.node)).toContainEqual({ name: p, desiredVersion: OTHER, runningVersion: OLD });
      const view = await r.gql(`{ agentPool(namespace: "default", name: "${p}") { exposedTo recreatedWith } }`);
      expect(view.agentPool).toEqual({ exposedTo: OTHER, recreatedWith: OTHER });
    }
    for (const p of released) expect(drift.drift.edges.map((e: any) => e.node)).toContainEqual({ name: p, desiredVersion: OLD, runningVersion: OTHER });
  });

  it('a helm upgrade with no rollout running is drift on held pools and an unplanned change in the history', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const type = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const held = structuredClone(r.pool('net-3')!);
    held.metadata.annotations = { ...held.metadata.annotations, [HOLD]: 'true' };
    r.sim.store.update(type, held);
    await r.waitFor(
      'rollplane sees the controller',
      async () => (await r.gql(`{ agentPool(namespace: "default", name: "net-1") { mode } }`)).agentPool.mode === 'COEXIST',
    );
    await r.waitFor('baseline agents recorded', () => r.readyAgents().size === 3);
    helmUpgrade(r, OTHER);
    await r.waitFor('unheld pools on the new image', () =>
      ['net-1', 'net-2'].every((p) => r.agent(p)?.spec.containers[0].image === OTHER && r.readyAgents().has(p)),
    );
    await r.waitFor('two unplanned recreations', async () => (await agentEvents(r)).filter((e) => e.type === 'AgentRecreated').length === 2);
    const events = await agentEvents(r);
    expect(
      events
        .filter((e) => e.type === 'AgentRecreated')
        .map((e) => [e.object.name, e.rolloutId, e.payload.reason, e.payload.newImage])
        .sort(),
    ).toEqual([
      ['net-1', null, 'unplanned', OTHER],
      ['net-2', null, 'unplanned', OTHER],
    ]);
    expect(events.find((e) => e.type === 'UpstreamControllerChanged')).toMatchObject({
      rolloutId: null,
      payload: { oldImage: OLD, newImage: OTHER, planned: false },
    });
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { edges { node { name desiredVersion runningVersion } } } }`);
    expect(drift.drift.edges.map((e: any) => e.node)).toEqual([{ name: 'net-3', desiredVersion: OTHER, runningVersion: OLD }]);
    // Someone else's hold: a rollout skips the pool and never releases it.
    expect((await r.gql(`{ agentPool(namespace: "default", name: "net-3") { held heldByRollplane } }`)).agentPool).toEqual({
      held: true,
      heldByRollplane: false,
    });
    const plan = await r.gql(BUMP, { input: { image: OTHER, dryRun: true } });
    expect(plan.bumpAgentImage.plan.find((p: any) => p.name === 'net-3')).toMatchObject({ action: 'skip', reason: expect.stringContaining('held') });
  });
});

describe('refusing a mode the cluster does not allow', () => {
  const refusal = async (r: Rig) => {
    const error = await r.gql(BUMP, { input: { image: NEW } }).then(
      () => undefined,
      (e: { errors: any[] }) => e.errors[0],
    );
    return error;
  };

  it('direct mode beside a controller that deploys agents: CONFLICT / AGENT_MODE_MISMATCH, nothing changed', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', agent: { mode: 'direct' } });
    const r = rig;
    const writes = { ...r.writes };
    const error = await refusal(r);
    expect(error?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'AGENT_MODE_MISMATCH', controllerState: 'agents' });
    expect(error.message).toContain('deploys agents');
    expect(r.writes).toEqual(writes);
    expect(controllerImage(r)).toBe(OLD);
    const rollouts = await r.gql(`{ rollouts { totalCount } }`);
    expect(rollouts.rollouts.totalCount).toBe(0);
  });

  it('coexist mode without a controller, or beside one run with --no-agent: CONFLICT / AGENT_MODE_MISMATCH', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2', agent: { mode: 'coexist' } });
    expect((await refusal(rig))?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'AGENT_MODE_MISMATCH', controllerState: 'absent' });
    await rig.close();
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp:no-agent', agent: { mode: 'coexist' } });
    expect((await refusal(rig))?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'AGENT_MODE_MISMATCH', controllerState: 'no-agent' });
  });

  it('ROLLPLANE_VMDHCP_CONTROLLER names the controller: the right one coexists, a wrong name is refused as absent', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', agent: { vmDhcpController: CONTROLLER } });
    const r = rig;
    await r.waitFor(
      'coexisting',
      async () => (await r.gql(`{ agentPool(namespace: "default", name: "net-1") { mode desiredImage } }`)).agentPool.mode === 'COEXIST',
    );
    const dry = await r.gql(BUMP, { input: { image: NEW, dryRun: true } });
    expect(dry.bumpAgentImage.dryRun).toBe(true);
    await r.close();
    rig = await startRig({
      fleet: 'pools=2,nodes=2,upstream=vm-dhcp',
      agent: { mode: 'coexist', vmDhcpController: { namespace: 'harvester-system', name: 'nope' } },
    });
    const error = await refusal(rig);
    expect(error?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'AGENT_MODE_MISMATCH', controllerState: 'absent' });
    expect(error.message).toContain('harvester-system/nope');
  });

  it('auto mode beside a controller run with --no-agent manages agents directly', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp:no-agent', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    const data = await r.gql(BUMP, { input: { image: NEW } });
    const done = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    for (const p of ['net-1', 'net-2']) expect(r.agent(p)!.spec.containers[0].image).toBe(NEW);
    expect(controllerImage(r)).toBe(OLD);
  });
});

// Issue 29, finding O1: the one-image rule looked at every busy agent-pool rollout, whatever its clusters, so a fleet
// could not move `local` to one image and a member to another at once ("the vm-dhcp-controller runs one --image"),
// though each cluster runs a controller of its own. The rule now holds per cluster.
describe("beside each member's own vm-dhcp-controller", () => {
  const THIRD = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
  let rigs: MemberRig | undefined;
  afterEach(async () => {
    await rigs?.close();
    rigs = undefined;
  });

  const refusal = (r: Rig, input: Record<string, unknown>) =>
    r.gql(BUMP, { input }).then(
      () => undefined,
      (error: { errors: { message: string; extensions?: Record<string, unknown> }[] }) => error.errors[0],
    );

  it("moves local's controller to one image and a member's to another at once; in either cluster another image is still refused", async () => {
    rigs = await startMemberRig({
      localFleet: 'pools=3,nodes=2,upstream=vm-dhcp',
      memberFleet: 'pools=3,nodes=2,upstream=vm-dhcp',
      delays: { podReadyMs: 20, podTerminateMs: 10 },
    });
    const r = rigs.rig;
    const m1: Pick<Rig, 'sim'> = { sim: rigs.m1 };
    // Paused after their canary, both stay active while the other is launched and refused.
    const canary = { maxUnavailable: '1', canary: 1 };
    const onLocal = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1', 'net-2'] }, strategy: canary } });
    const localId: string = onLocal.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, localId, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    const onMember = await r.gql(BUMP, { input: { image: OTHER, memberClusters: { names: ['m1'] }, pools: { names: ['net-1', 'net-2'] }, strategy: canary } });
    expect(onMember.bumpAgentImage.created).toBe(true);
    const memberId: string = onMember.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, memberId, ['PAUSED', 'FAILED'])).state).toBe('PAUSED');
    expect(controllerImage(r)).toBe(NEW);
    expect(controllerImage(m1)).toBe(OTHER);

    // In each cluster, a third image would move the controller under the rollout there: refused, naming the cluster.
    const inLocal = await refusal(r, { image: THIRD, pools: { names: ['net-3'] } });
    expect(inLocal?.extensions?.code).toBe('CONFLICT');
    expect(inLocal?.message).toBe(
      `in cluster local the vm-dhcp-controller runs one --image for every pool, and active rollout ${localId} is moving it to ${NEW}; wait for it, or abort it first`,
    );
    const inMember = await refusal(r, { image: NEW, memberClusters: { names: ['m1'] }, pools: { names: ['net-3'] } });
    expect(inMember?.extensions?.code).toBe('CONFLICT');
    expect(inMember?.message).toBe(
      `in cluster m1 the vm-dhcp-controller runs one --image for every pool, and active rollout ${memberId} is moving it to ${OTHER}; wait for it, or abort it first`,
    );
    expect((await r.gql('{ rollouts(first: 10) { totalCount } }')).rollouts.totalCount).toBe(2);

    await r.gql(`mutation { a: resumeRollout(id: "${localId}") { state } b: resumeRollout(id: "${memberId}") { state } }`);
    for (const id of [localId, memberId]) {
      const done = await waitForRollout(r, id, ['SUCCEEDED', 'FAILED', 'ABORTED']);
      expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    }
    expect(controllerImage(r)).toBe(NEW);
    expect(controllerImage(m1)).toBe(OTHER);
    const agentImage = (sim: Simulator, pool: string) =>
      sim.store.get(sim.store.resourceType('', 'pods')!, 'harvester-system', `default-${pool}-agent`)?.spec.containers[0].image;
    for (const pool of ['net-1', 'net-2']) {
      expect(agentImage(r.sim, pool), `local ${pool}`).toBe(NEW);
      expect(agentImage(m1.sim, pool), `m1 ${pool}`).toBe(OTHER);
    }
  });

  // Issue 29's bench: a member's "no reason to halt" is asked again only once its caches changed (each pass asked every
  // member again). A helm upgrade of a member's controller mid-rollout changes them: the rollout still fails.
  it("a helm upgrade of a member's controller mid-rollout fails the rollout there, naming the member", async () => {
    rigs = await startMemberRig({
      localFleet: 'pools=1,nodes=1,upstream=vm-dhcp',
      memberFleet: 'pools=6,nodes=3,upstream=vm-dhcp',
      delays: { podReadyMs: 150, podTerminateMs: 10 },
    });
    const r = rigs.rig;
    const m1: Pick<Rig, 'sim'> = { sim: rigs.m1 };
    const data = await r.gql(BUMP, { input: { image: NEW, memberClusters: { names: ['m1'] }, strategy: { maxUnavailable: '1' } } });
    const id: string = data.bumpAgentImage.rollout.id;
    await r.waitFor('one pool upgraded', async () => (await r.gql(`{ rollout(id: "${id}") { progress { succeeded } } }`)).rollout.progress.succeeded >= 1);

    helmUpgrade(m1, OTHER);
    const failed = await waitForRollout(r, id, ['FAILED', 'SUCCEEDED'], 30_000);
    expect(failed.state).toBe('FAILED');
    expect(failed.message).toMatch(
      /^in member cluster m1: the vm-dhcp-controller .* now deploys .*v0\.3\.2, not .*: its --image was changed outside rollplane/,
    );
    // `local`'s controller was not touched.
    expect(controllerImage(r)).toBe(OLD);
  });

  // Attack 25, F4: a member where the rollout changes nothing (an operator held every pool it selects there) had its
  // controller moved to the rollout's image anyway, exposing those held pools to it.
  it('leaves the controller of a member where the rollout only skips pools', async () => {
    rigs = await startMemberRig({
      localFleet: 'pools=2,nodes=1,upstream=vm-dhcp',
      memberFleet: 'pools=2,nodes=1,upstream=vm-dhcp',
      delays: { podReadyMs: 20, podTerminateMs: 10 },
    });
    const r = rigs.rig;
    const m1: Pick<Rig, 'sim'> = { sim: rigs.m1 };
    const pools = rigs.m1.store.resourceType('network.harvesterhci.io', 'ippools')!;
    for (const name of ['net-1', 'net-2']) {
      const pool = structuredClone(rigs.m1.store.get(pools, 'default', name)!);
      pool.metadata.annotations = { ...pool.metadata.annotations, [HOLD]: 'maintenance' };
      rigs.m1.store.update(pools, pool);
    }
    await r.waitFor("rollplane sees both of m1's pools held", async () => {
      const data = await r.gql('{ agentPools(cluster: "m1") { edges { node { held } } } }');
      return data.agentPools.edges.filter((e: { node: { held: boolean } }) => e.node.held).length === 2;
    });
    const data = await r.gql(BUMP, { input: { image: NEW, memberClusters: { names: ['local', 'm1'] }, strategy: { maxUnavailable: '1' } } });
    expect(data.bumpAgentImage.plan.filter((t: { action: string }) => t.action === 'skip')).toHaveLength(2);
    const done = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    expect(controllerImage(r)).toBe(NEW);
    expect(controllerImage(m1)).toBe(OLD);
  });
});
