/**
 * Attack 22, G4: on a member beside the vm-dhcp-controller, a rollout's admission is the history's row first and the
 * member's writes follow (its prepare — the holds, then the controller's --image — and the release). A rollout
 * superseded while its prepare's hold writes were slow never wrote its image there, so its admitted target did not
 * change; it stayed PROGRESSING until its progress deadline and was then recorded FAILED ("waiting for rollplane to
 * set the vm-dhcp-controller's --image"), and the rollout's finish in that cluster waited that long too. The target
 * now ends CANCELLED, saying why, as soon as the rollout is over.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../../src/sim/index.js';
import type { ApiRequestInfo } from '../../../src/sim/types.js';
import { BUMP, type MemberRig, NEW, startMemberRig, waitForRollout } from './rig.js';

const OTHER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';

let rigs: MemberRig | undefined;
afterEach(async () => {
  await rigs?.close();
  rigs = undefined;
});

/** Holds every hold write (non-dry-run IPPool patch) on `sim` until `open()`; says when the first one arrived. */
function stallHoldWrites(sim: Simulator) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let arrived!: () => void;
  const firstArrived = new Promise<void>((resolve) => (arrived = resolve));
  const earlier = sim.api.hooks.beforeRequest;
  sim.api.hooks = {
    ...sim.api.hooks,
    beforeRequest: async (info: ApiRequestInfo) => {
      await earlier?.(info);
      if (info.verb !== 'patch' || info.resource.plural !== 'ippools' || info.subresource || info.dryRun) return;
      arrived();
      await opened;
    },
  };
  return { open, firstArrived };
}

describe('a rollout superseded before its write in a member cluster', () => {
  it('ends its untouched admitted target CANCELLED at once, not FAILED at its deadline', async () => {
    rigs = await startMemberRig({
      localFleet: 'pools=1,nodes=1,upstream=vm-dhcp',
      memberFleet: 'pools=3,nodes=2,upstream=vm-dhcp',
      delays: { podReadyMs: 20, podTerminateMs: 10 },
    });
    const { rig: r, m1 } = rigs;
    const stall = stallHoldWrites(m1);
    // A deadline far beyond the test's own wait: the old behaviour (FAILED at the deadline) cannot pass by luck.
    const strategy = { maxUnavailable: '1', progressDeadlineSeconds: 600 };
    const first = await r.gql(BUMP, { input: { image: NEW, memberClusters: { names: ['m1'] }, strategy } });
    const firstId: string = first.bumpAgentImage.rollout.id;
    await stall.firstArrived;
    // The engine admitted the first pool (the history's row) while the member's prepare waits on its holds.
    await r.waitFor('the first target admitted', async () => {
      const data = await r.gql(`{ rollout(id: "${firstId}") { progress { progressing } } }`);
      return data.rollout.progress.progressing >= 1;
    });
    const second = await r.gql(BUMP, { input: { image: OTHER, memberClusters: { names: ['m1'] }, strategy, supersede: true } });
    const secondId: string = second.bumpAgentImage.rollout.id;
    expect((await waitForRollout(r, firstId, ['ABORTED'])).state).toBe('ABORTED');
    stall.open();

    expect((await waitForRollout(r, secondId, ['SUCCEEDED', 'FAILED'], 120_000)).state).toBe('SUCCEEDED');
    const targets = await r.waitFor('the superseded rollout has no target in flight', async () => {
      const data = await r.gql(`{ rollout(id: "${firstId}") { targets(first: 10) { edges { node { name state error } } } } }`);
      const nodes: { name: string; state: string; error: string | null }[] = data.rollout.targets.edges.map((e: { node: unknown }) => e.node);
      return nodes.some((t) => t.state === 'PROGRESSING') ? undefined : nodes;
    });
    const admitted = targets.filter((t) => t.error !== null);
    expect(admitted.length, JSON.stringify(targets)).toBeGreaterThanOrEqual(1);
    for (const target of admitted) {
      expect(target.state, target.name).toBe('CANCELLED');
      expect(target.error).toMatch(/ended \(ABORTED\) before rollplane set the vm-dhcp-controller's --image .* the pool did not change/);
    }
    expect(targets.every((t) => t.state === 'CANCELLED')).toBe(true);
  });
});
