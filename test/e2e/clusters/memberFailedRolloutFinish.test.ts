import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../../src/sim/index.js';
import { AGENT_NS, BUMP, CONTROLLER, type MemberRig, OLD, startMemberRig, waitForRollout } from '../agentPool/rig.js';

/**
 * Attack 25, F1: a rollout that failed in a member beside its vm-dhcp-controller (no rollback after it) put the
 * controller's --image back and took the holds of the pools that never moved off at the same moment: the engine's finish
 * returned at once because the member's own finish had already started (it heard the rollout end), the rollout was
 * marked finished, and the sweep of ended rollouts' holds released every pool while the old controller pod, still on
 * the failed image, led — it recreated all of them on the failed image, under maxUnavailable 1. `local` waited for the
 * controller's own rolling update first. A pool that never moved must keep its agent.
 */
const BAD = 'rancher/harvester-vm-dhcp-agent:bad-v0.3.9';
const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';

/** Every agent pod m1 ever had, by pool: its uid and image. */
function recordAgents(m1: Simulator) {
  const pods = m1.store.resourceType('', 'pods')!;
  const seen = new Map<string, Map<string, string>>();
  const sample = () => {
    for (const pod of m1.store.list(pods, AGENT_NS)) {
      const pool = pod.metadata.labels?.['network.harvesterhci.io/ippool-name'];
      if (!pool) continue;
      if (!seen.has(pool)) seen.set(pool, new Map());
      seen.get(pool)!.set(pod.metadata.uid!, pod.spec.containers[0].image);
    }
  };
  sample();
  return { seen, stop: m1.store.subscribe(sample) };
}

function controllerImage(m1: Simulator): string {
  const args: string[] = m1.store.get(m1.store.resourceType('apps', 'deployments')!, CONTROLLER.namespace, CONTROLLER.name)!.spec.template.spec.containers[0]
    .args;
  return args[args.indexOf('--image') + 1]!;
}

describe('a rollout that failed in a member beside its vm-dhcp-controller', () => {
  let rigs: MemberRig | undefined;
  afterEach(async () => {
    await rigs?.close();
    rigs = undefined;
  });

  it('leaves the pools that never moved on their agents: their holds come off only after the controller is back', async () => {
    rigs = await startMemberRig({
      localFleet: 'pools=1,nodes=1',
      memberFleet: 'pools=4,nodes=2,upstream=vm-dhcp',
      delays: { podReadyMs: 150, podTerminateMs: 10 },
    });
    const r = rigs.rig;
    const m1 = rigs.m1;
    const agents = recordAgents(m1);
    try {
      const data = await r.gql(BUMP, {
        input: { image: BAD, memberClusters: { names: ['m1'] }, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 2, autoRollback: false } },
      });
      const failed = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['FAILED', 'SUCCEEDED']);
      expect(failed.state).toBe('FAILED');
      const moved = failed.targets.edges
        .map((e: any) => e.node)
        .filter((t: any) => t.state === 'FAILED')
        .map((t: any) => t.name as string);
      const untouched = ['net-1', 'net-2', 'net-3', 'net-4'].filter((p) => !moved.includes(p));
      expect(moved).toHaveLength(1);
      const pools = m1.store.resourceType('network.harvesterhci.io', 'ippools')!;
      // The end of the finish: the controller back, and the holds of the pools that never moved off.
      await r.waitFor(
        'the controller back and the untouched pools released',
        () => controllerImage(m1) === OLD && untouched.every((p) => m1.store.get(pools, 'default', p)?.metadata.annotations?.[HOLD] === undefined),
      );
      // Upstream's rolling update of the controller, and its next reconciles, have had their chance: its pods settled.
      await r.waitFor("the controller's pods on the old image", () => {
        const pods = m1.store
          .list(m1.store.resourceType('', 'pods')!, CONTROLLER.namespace)
          .filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
        return pods.length > 0 && pods.every((p) => p.spec.containers[0].args.includes(OLD) && !p.metadata.deletionTimestamp);
      });
    } finally {
      agents.stop();
    }
    for (const [pool, pods] of agents.seen) {
      if (!['net-1', 'net-2', 'net-3', 'net-4'].includes(pool)) continue;
      const images = [...pods.values()];
      if (images.includes(BAD) && pods.size === 2) continue; // the one pool the rollout moved
      expect({ pool, images }).toEqual({ pool, images: [OLD] });
    }
  });
});
