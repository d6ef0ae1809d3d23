/**
 * The sweep of a stray hold (a hold of rollplane's that landed after its rollout ended, attack 18 M1) waits while an
 * agent-pool rollout is active — in the pool's own cluster only (issue 29). Waiting on any cluster's rollouts, one
 * cluster's stray hold stayed on for as long as rollouts ran anywhere in the fleet.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RolloutService } from '../../../src/domain/RolloutService.js';
import { EndedRolloutHolds } from '../../../src/kinds/agentPool/controller/EndedRolloutHolds.js';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD, ROLLPLANE_HOLD_VALUE } from '../../../src/kinds/agentPool/controller/names.js';
import type { PoolHoldWrites } from '../../../src/kinds/agentPool/controller/PoolHoldWrites.js';
import type { IPPool } from '../../../src/kinds/agentPool/controller/types.js';
import type { VmDhcpControllerWatch } from '../../../src/kinds/agentPool/controller/VmDhcpControllerWatch.js';

const IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const NS = 'harvester-system';

/** A pool on the controller's image, held by the ended rollout `ro-ended`. */
const strayHeld = {
  metadata: {
    namespace: 'default',
    name: 'net-1',
    annotations: { [ANNOTATION_HOLD]: ROLLPLANE_HOLD_VALUE, [ANNOTATION_HELD_BY]: 'ro-ended' },
  },
  status: { agentPodRef: { namespace: NS, name: 'default-net-1-agent', image: IMAGE } },
} as unknown as IPPool;
const agent = { metadata: { namespace: NS, name: 'default-net-1-agent' }, spec: { containers: [{ name: 'agent', image: IMAGE }] } } as V1Pod;

/** The sweep of `cluster`'s pools, with one active agent-pool rollout in the cluster `activeIn`. */
function sweeper(cluster: string, activeIn: string, finishingHere?: (rolloutId: string) => boolean) {
  const released: string[] = [];
  const holds = {
    write: async (pool: IPPool) => {
      released.push(pool.metadata!.name!);
      return { written: true };
    },
  } as unknown as PoolHoldWrites;
  const rollouts = {
    get: async (id: string) => (id === 'ro-ended' ? { id, state: 'ABORTED', engineState: { finished: true } } : undefined),
    // As the history answers the filter: the active rollout only when it has a target in one of the clusters asked.
    list: async (filter: { clusters?: string[] }) => ({
      items: !filter.clusters || filter.clusters.includes(activeIn) ? [{ id: 'ro-active', state: 'PROGRESSING' }] : [],
    }),
  } as unknown as Pick<RolloutService, 'list' | 'get'>;
  const sweep = new EndedRolloutHolds({
    holds,
    pods: { get: () => agent, list: () => [agent] } as never,
    agentNamespace: NS,
    controller: { state: () => ({ kind: 'agents', image: IMAGE }) } as unknown as VmDhcpControllerWatch,
    rollouts,
    cluster,
    ...(finishingHere ? { finishingHere } : {}),
  });
  return { sweep, released };
}

describe('EndedRolloutHolds, per cluster', () => {
  it('takes a stray hold off while a rollout runs in another cluster', async () => {
    const { sweep, released } = sweeper('local', 'm1');
    expect(await sweep.sweep(strayHeld)).toBeUndefined();
    expect(released).toEqual(['net-1']);
  });

  it('waits while a rollout runs in its own cluster', async () => {
    const { sweep, released } = sweeper('local', 'local');
    expect(await sweep.sweep(strayHeld)).toEqual({ requeueAfterMs: expect.any(Number) });
    expect(released).toEqual([]);
  });

  // Attack 25, F1: marked finished by the engine on another replica while its finish here still waits for the
  // controller's own rolling update: its holds are that finish's to take off.
  it('leaves the holds of a rollout whose finish runs here now, and takes them off after it', async () => {
    let finishing = true;
    const { sweep, released } = sweeper('m1', 'local', () => finishing);
    expect(await sweep.sweep(strayHeld)).toEqual({ requeueAfterMs: expect.any(Number) });
    expect(released).toEqual([]);
    finishing = false;
    expect(await sweep.sweep(strayHeld)).toBeUndefined();
    expect(released).toEqual(['net-1']);
  });
});
