import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, memberPool } from '../../helpers/memberFleet.js';
import { registerMembers } from '../../helpers/memberFleet.js';
import { until } from '../../helpers/until.js';

/**
 * A member whose writes hang must not hold the other members' targets (issue 29: "an unreachable or slow cluster never
 * delays work on the others"). The engine admits a member's target by recording it and starting the member's write,
 * not by waiting for that write: before, every admission pass of the rollout waited for the slow member's write, up
 * to its request timeout, and the healthy members' targets waited with it (the benchmark's black-holed run).
 */
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const WRITE_TIMEOUT_MS = 30_000;

describe("a member's hanging writes", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member slow writes '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: ['edge-1', 'edge-2'].map((name) => ({ name, fleet: 'pools=2,nodes=2,peers=0' })) });
    registerMembers(dir, fleet, ['edge-1', 'edge-2'], () => ({ tier: 'edge' }));
    // A hanging write stays in flight for the member's request timeout, WRITE_TIMEOUT_MS: longer than the wait for the
    // healthy member below, so that an engine that waits for it cannot pass.
    const env = { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: String(WRITE_TIMEOUT_MS), ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1' };
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env });
    await until('both members driven', () =>
      ['edge-1', 'edge-2'].every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL'))),
    );
  });
  afterAll(async () => {
    // Closing waits for the write still held (up to its timeout): a member's writes are not cut off mid-request.
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 2 * WRITE_TIMEOUT_MS);

  it("lets the healthy member's targets finish while the other's first write hangs", async () => {
    const slow = fleet.clusters.get('edge-1')!.simulator;
    // edge-1 holds every IPPool write for ten minutes (not its reads, probes or dry runs): admission never lands there.
    slow.faults.set({ latencyMs: { update: 600_000, patch: 600_000 }, resources: ['ippools.network.harvesterhci.io'], dryRuns: false });
    const seen: StoredEvent[] = [];
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.type === EventType.TargetStateChanged || event.type === EventType.RolloutStateChanged) seen.push(event);
    });
    try {
      const res = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
        // Plan order edge-1 first; one target per member at once, so the first pass admits one in each.
        input: {
          image: NEW,
          memberClusters: { names: ['edge-1', 'edge-2'] },
          strategy: { maxUnavailable: '2', maxUnavailablePerMemberCluster: '1', progressDeadlineSeconds: 600, autoRollback: false },
        },
      });
      expect(res.errors).toBeUndefined();
      const id: string = res.data.bumpAgentImage.rollout.id;
      const succeededIn = (cluster: string) =>
        seen.filter((e) => e.type === EventType.TargetStateChanged && e.cluster === cluster && e.payload.to === 'SUCCEEDED').length;

      await until("edge-2's two pools upgraded", () => succeededIn('edge-2') === 2, { timeoutMs: WRITE_TIMEOUT_MS / 2 });
      for (const name of ['net-1', 'net-2']) expect(memberPool(fleet, 'edge-2', name)?.status.agentPodRef.image).toBe(NEW);
      // edge-1's first write is still held; nothing of edge-1 ended, and its second pool was not admitted past its limit.
      expect(slow.faults.stats().delayed).toBeGreaterThanOrEqual(1);
      expect(succeededIn('edge-1')).toBe(0);
      const progressingIn1 = seen.filter((e) => e.type === EventType.TargetStateChanged && e.cluster === 'edge-1' && e.payload.to === 'PROGRESSING');
      expect(progressingIn1).toHaveLength(1);

      // Ended by the user: the held write is abandoned (the rollout's writes stop once it is heard ending).
      const aborted = await gql(app.url, 'mutation ($id: ID!) { abortRollout(id: $id, reason: "test over") { state } }', { id });
      expect(aborted.errors).toBeUndefined();
      await until('aborted', () => seen.some((e) => e.type === EventType.RolloutStateChanged && e.payload.to === 'ABORTED'));
    } finally {
      unsubscribe();
      slow.faults.set({});
    }
  });
});
