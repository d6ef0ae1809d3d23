import { describe, expect, it } from 'vitest';
import { defaultStrategy } from '../../../src/domain/kinds/index.js';
import type { BusyRollout, LaunchGuard } from '../../../src/domain/launchRules.js';
import type { NewTarget, Rollout } from '../../../src/domain/RolloutService.js';
import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { agentPoolRollbackRules } from '../../../src/kinds/agentPool/plan.js';

/**
 * The one-image rule beside the vm-dhcp-controller (issue 29, O1): each cluster runs a controller of its own, so a busy
 * rollout to another image stands in the way only in the clusters it has targets in. Judged here through a rollback's
 * guard (a bump's is the same rule, over its clusters beside the controller: test/e2e/agentPool/coexist.test.ts).
 */
const OLD = 'agent:v1';
const NEW = 'agent:v2';
const OTHER = 'agent:v3';

function rollout(id: string, toVersion: string, extra: Partial<Rollout> = {}): Rollout {
  return {
    id,
    kind: 'AGENT_POOL',
    state: 'PROGRESSING',
    fromVersion: OLD,
    toVersion,
    selector: {},
    strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    cause: {},
    idempotencyKey: null,
    rollbackOfId: null,
    message: null,
    engineState: {},
    createdAt: new Date(0),
    updatedAt: new Date(0),
    startedAt: new Date(0),
    finishedAt: null,
    startedBy: null,
    ...extra,
  };
}

const busy = (id: string, toVersion: string, clusters: string[], extra: Partial<Rollout> = {}): BusyRollout => ({
  ...rollout(id, toVersion, extra),
  clusters: new Set(clusters),
});

/** The guard of a rollback of `original` whose targets are in `clusters` (undefined: `local`), back to OLD. */
async function rollbackGuard(original: Rollout, clusters: (string | undefined)[]): Promise<LaunchGuard> {
  const rules = agentPoolRollbackRules({ checkRollout: async () => 'COEXIST' });
  const targets: NewTarget[] = clusters.map((cluster, i) => ({
    ...(cluster ? { cluster } : {}),
    namespace: 'default',
    name: `net-${i}`,
    fromVersion: NEW,
    toVersion: OLD,
  }));
  return (await rules(original, targets)).guard!;
}

const judge =
  (guard: LaunchGuard, rollouts: BusyRollout[], superseding: string[] = []) =>
  () =>
    guard(rollouts, { superseding: new Set(superseding) });

describe('the agent-pool guard: one controller image per cluster', () => {
  const original = rollout('r-original', NEW, { state: 'SUCCEEDED' });

  it('lets a rollout to another image run in another cluster', async () => {
    const guard = await rollbackGuard(original, [undefined]);
    expect(judge(guard, [busy('r-m1', OTHER, ['m1']), busy('r-m2', OTHER, ['m2', 'm3'])])).not.toThrow();
  });

  it('refuses when a rollout to another image has a target in one of its clusters, naming that cluster', async () => {
    const guard = await rollbackGuard(original, [undefined, 'm2']);
    expect(judge(guard, [busy('r-m1', OTHER, ['m1']), busy('r-both', OTHER, ['m3', 'm2'])])).toThrow(
      expect.objectContaining({
        code: 'CONFLICT',
        message: `in cluster m2 the vm-dhcp-controller runs one --image for every pool, and active rollout r-both is moving it to ${OTHER}; wait for it, or abort it first`,
        details: { rolloutIds: ['r-both'], cluster: 'm2' },
      }),
    );
  });

  it('counts a busy rollout that ended with targets still finishing, and names it so', async () => {
    const guard = await rollbackGuard(original, ['m1']);
    expect(judge(guard, [busy('r-aborted', OTHER, ['m1'], { state: 'ABORTED' })])).toThrow(/in cluster m1 .* rollout r-aborted \(ABORTED, still finishing\)/);
  });

  it('lets rollouts to the same image, the original it takes over and those it supersedes run in its clusters', async () => {
    const guard = await rollbackGuard(rollout('r-original', NEW), ['m1']);
    expect(judge(guard, [busy('r-same', OLD, ['m1']), busy('r-original', NEW, ['m1']), busy('r-superseded', OTHER, ['m1'])], ['r-superseded'])).not.toThrow();
  });

  it("refuses a rollback whose clusters would go back to different images: its one toVersion is each controller's --image", async () => {
    const rules = agentPoolRollbackRules({ checkRollout: async () => 'COEXIST' });
    const target = (cluster: string, toVersion: string): NewTarget => ({ cluster, namespace: 'default', name: `net-${cluster}`, fromVersion: NEW, toVersion });
    const everyTarget = [target('local', OLD), target('m1', OTHER)];
    // Asked for m1's targets alone (ClusterRoutedDriver asks each cluster), the whole rollback still counts.
    await expect(rules(rollout('r-original', NEW), [everyTarget[1]!], everyTarget)).rejects.toThrow(
      `rollout r-original changed pools that ran different images before (${OLD}, ${OTHER}); the vm-dhcp-controller deploys one --image`,
    );
    await expect(rules(rollout('r-original', NEW), [everyTarget[1]!])).resolves.toHaveProperty('guard');
  });
});
