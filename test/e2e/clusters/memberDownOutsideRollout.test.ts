import { afterEach, describe, expect, it } from 'vitest';
import { startCli } from '../../cli/cliHarness.js';
import { ANNOTATION_HOLD } from '../../../src/kinds/agentPool/controller/names.js';
import type { Simulator } from '../../../src/sim/index.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { AGENT_NS, BUMP, type MemberRig, NEW, OLD, startMemberRig, waitForRollout } from '../agentPool/rig.js';

/**
 * maxUnavailable counts the pools of a rollout's selection that are down outside it (a held pool, one that joined after
 * the plan), in member clusters too (issue 29's bench: each pass now counts again only in the members whose caches
 * changed since its last look, MemberChangeFeed). A held pool of m1, down, holds a rollout of every pool under
 * maxUnavailable 1 until it is back: counted, at no moment two pools of m1 down at once; and counted again once it is
 * back, or the rollout would wait for ever.
 */
const BAD = 'rancher/harvester-vm-dhcp-agent:bad';
const POOLS = ['net-1', 'net-2', 'net-3', 'net-4'];

/** m1's pools without a Ready agent, now. */
function downIn(m1: Simulator): string[] {
  const pods = m1.store.resourceType('', 'pods')!;
  const ready = new Set<string>();
  for (const pod of m1.store.list(pods, AGENT_NS)) {
    const pool = pod.metadata.labels?.['network.harvesterhci.io/ippool-name'];
    const isReady =
      !pod.metadata.deletionTimestamp &&
      (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
    if (pool && isReady) ready.add(pool);
  }
  return POOLS.filter((pool) => !ready.has(pool));
}

describe("a member's pools down outside a rollout", () => {
  let rigs: MemberRig | undefined;
  afterEach(async () => {
    await rigs?.close();
    rigs = undefined;
  });

  it('count against its maxUnavailable until they are back', async () => {
    rigs = await startMemberRig({ localFleet: 'pools=1,nodes=1', memberFleet: 'pools=4,nodes=2', delays: { podReadyMs: 50, podTerminateMs: 10 } });
    const r = rigs.rig;
    const m1 = rigs.m1;
    const inM1 = (pools: string[], image: string, strategy: Record<string, unknown>) =>
      r.gql(BUMP, { input: { image, memberClusters: { names: ['m1'] }, pools: { names: pools }, strategy } });

    // net-4 down (its agent on an image that is never pulled) and held by an operator: skipped by the next bump.
    const broken = await inM1(['net-4'], BAD, { maxUnavailable: '1', progressDeadlineSeconds: 2, autoRollback: false });
    expect((await waitForRollout(r, broken.bumpAgentImage.rollout.id, ['FAILED', 'SUCCEEDED'])).state).toBe('FAILED');
    await r.waitFor('net-4 down in m1', () => downIn(m1).join() === 'net-4');
    const pools = m1.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const edit = (change: (pool: KubeObject) => void, subresource?: string) => {
      const pool = structuredClone(m1.store.get(pools, 'default', 'net-4')!);
      change(pool);
      m1.store.update(pools, pool, subresource);
    };
    edit((pool) => {
      pool.metadata.annotations = { ...pool.metadata.annotations, [ANNOTATION_HOLD]: 'maintenance' };
    });
    await r.waitFor('rollplane sees net-4 held', async () => {
      const data = await r.gql('{ agentPools(cluster: "m1") { edges { node { name held } } } }');
      return data.agentPools.edges.some((e: { node: { name: string; held: boolean } }) => e.node.name === 'net-4' && e.node.held);
    });

    let worst: string[] = [];
    const sample = () => {
      const down = downIn(m1);
      if (down.length > worst.length) worst = down;
    };
    const unsubscribe = m1.store.subscribe(sample);
    try {
      const held = await inM1(POOLS, NEW, { maxUnavailable: '1' });
      const heldId: string = held.bumpAgentImage.rollout.id;
      expect(held.bumpAgentImage.plan.filter((t: { name: string; action: string }) => t.action === 'skip').map((t: { name: string }) => t.name)).toEqual([
        'net-4',
      ]);
      // It says what it waits for (attack 25, F5: nothing said it, and it looked like a hang).
      const waiting = await r.waitFor('the rollout says what holds it back', async () => {
        const data = await r.gql(`{ rollout(id: "${heldId}") { state waitingFor } }`);
        return data.rollout.waitingFor ? data.rollout : undefined;
      });
      expect(waiting).toEqual({
        state: 'PROGRESSING',
        waitingFor:
          '1 target of its selection is unavailable outside the rollout and takes the free slots of maxUnavailable 1: more are admitted once it is back',
      });
      const status = await startCli(['rollout', 'status', heldId, '--url', r.url]).done;
      expect(status.stdout).toContain(`  waiting:  ${waiting.waitingFor}`);
      // The operator puts the pool back on its old image, takes the hold off and deletes the broken agent, which is
      // created again on the old image: the held rollout counts m1 again.
      edit((pool) => {
        pool.status.agentPodRef.image = OLD;
      }, 'status');
      edit((pool) => {
        delete pool.metadata.annotations?.[ANNOTATION_HOLD];
      });
      m1.store.delete(m1.store.resourceType('', 'pods')!, AGENT_NS, 'default-net-4-agent');
      expect((await waitForRollout(r, heldId, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      expect((await r.gql(`{ rollout(id: "${heldId}") { waitingFor } }`)).rollout.waitingFor).toBeNull();
    } finally {
      unsubscribe();
    }
    expect(worst, 'never two pools of m1 down at once').toHaveLength(1);
    expect(downIn(m1)).toEqual([]);
  });
});
