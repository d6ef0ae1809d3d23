/**
 * Rollouts to the same image side by side beside the vm-dhcp-controller (issue 34, finding 3). The launch guard lets
 * them run together; they must cooperate: a later rollout's prepare once re-held a pool an earlier one had just
 * released for that very image, and the earlier one then waited "releasing the hold" until its deadline, FAILED, and
 * left the pool held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BUMP, NEW, startRig, waitForRollout, type Rig } from './rig.js';

const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Every pool whose hold came back after it had been taken off: a release undone by someone. */
function watchReholds(r: Rig) {
  const released = new Set<string>();
  const reheld: string[] = [];
  const pools = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
  const unsubscribe = r.sim.store.subscribe((event) => {
    if (event.resource !== pools) return;
    const name = event.object.metadata.name!;
    const held = event.object.metadata.annotations?.[HOLD] !== undefined;
    if (!held) released.add(name);
    else if (released.has(name)) {
      reheld.push(name);
      released.delete(name);
    }
  });
  return { reheld, stop: unsubscribe };
}

describe('agent-pool rollouts to the same image beside the vm-dhcp-controller', () => {
  it('cooperate: single-pool bumps sent as each previous pool is released all succeed, and no released pool is held again', async () => {
    // Agents take a while to become Ready, so each bump lands while the previous pool is between release and its new agent.
    rig = await startRig({ fleet: 'pools=8,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 150, podTerminateMs: 20 } });
    const r = rig;
    const watch = watchReholds(r);
    const ids: string[] = [];
    for (let i = 1; i <= 8; i++) {
      const pool = `net-${i}`;
      const bump = await r.gql(BUMP, { input: { image: NEW, pools: { names: [pool] }, strategy: { progressDeadlineSeconds: 120 } } });
      ids.push(bump.bumpAgentImage.rollout.id);
      // The attacker's timing: the next bump goes out the moment this pool's hold comes off.
      await r.waitFor(`${pool} released`, () => r.pool(pool)?.metadata.annotations?.[HOLD] === undefined);
    }
    const ended = await Promise.all(ids.map((id) => waitForRollout(r, id, ['SUCCEEDED', 'FAILED', 'ABORTED'], 120_000)));
    watch.stop();
    expect(watch.reheld).toEqual([]);
    expect(ended.map((rollout) => `${rollout.state} ${rollout.message ?? ''}`.trim())).toEqual(ids.map(() => 'SUCCEEDED'));
    for (let i = 1; i <= 8; i++) {
      expect(r.pool(`net-${i}`)!.metadata.annotations?.[HOLD], `net-${i}`).toBeUndefined();
      expect(r.agent(`net-${i}`)!.spec.containers[0].image, `net-${i}`).toBe(NEW);
    }
  });

  it('an abort of one before anything was released leaves the controller on the image another rollout to it still needs', async () => {
    rig = await startRig({ fleet: 'pools=4,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    // A canary of one that pauses: the second rollout to the same image waits in its canary pause too.
    const first = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1', 'net-2'] }, strategy: { canary: 1, maxUnavailable: '1' } } });
    const firstId = first.bumpAgentImage.rollout.id;
    await waitForRollout(r, firstId, ['PAUSED']);
    const second = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-3', 'net-4'] }, strategy: { canary: 1, maxUnavailable: '1' } } });
    const secondId = second.bumpAgentImage.rollout.id;
    await waitForRollout(r, secondId, ['PAUSED']);
    await r.gql(`mutation { abortRollout(id: "${firstId}", reason: "test") { state } }`);
    await waitForRollout(r, firstId, ['ABORTED']);
    await r.gql(`mutation { resumeRollout(id: "${secondId}") { state } }`);
    const done = await waitForRollout(r, secondId, ['SUCCEEDED', 'FAILED']);
    expect(`${done.state} ${done.message ?? ''}`.trim()).toBe('SUCCEEDED');
    for (const pool of ['net-3', 'net-4']) expect(r.agent(pool)!.spec.containers[0].image, pool).toBe(NEW);
  });
});
