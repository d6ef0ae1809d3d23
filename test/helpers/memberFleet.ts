import type { StoredEvent } from '../../src/domain/events.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { planAcrossClusters } from '../../src/domain/clusterSelection.js';
import type { AgentPoolStrategy } from '../../src/kinds/agentPool/contract.js';
import type { SimulatedClusters } from '../../src/sim/simulatedClusters.js';
import type { TestApp } from './app.js';
import { until } from './until.js';

/**
 * What a test app driving simulated member clusters runs with: its controllers on, this replica leading without a
 * Lease, and member probes, backoffs, timeouts and source syncs short enough for a member cut off mid-rollout to be
 * noticed within a test (each one a condition the tests wait on, never a sleep).
 */
export const MEMBER_FLEET_ENV: Readonly<Record<string, string>> = {
  ROLLPLANE_CONTROLLERS: 'on',
  ROLLPLANE_LEADER_ELECT: 'false',
  ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '200',
  ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '100',
  ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS: '400',
  ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: '1000',
  ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '200',
  ROLLPLANE_AUTH: 'off',
};

/** Registers `names` of the simulated fleet through the embedded mode's credentials file in `dir` (0600), with their labels. */
export function registerMembers(dir: string, fleet: SimulatedClusters, names: readonly string[], labelsOf: (name: string) => Record<string, string>): void {
  const clusters = names.map((name) => ({ name, labels: labelsOf(name), kubeconfig: fleet.clusters.get(name)!.kubeconfig }));
  writeFileSync(path.join(dir, 'member-clusters.yaml'), stringify({ clusters }), { mode: 0o600 });
}

/** A member's IPPool `default/<name>` as its simulator holds it. */
export function memberPool(fleet: SimulatedClusters, cluster: string, name: string) {
  const sim = fleet.clusters.get(cluster)!.simulator;
  return sim.store.get(sim.store.resourceType('network.harvesterhci.io', 'ippools')!, 'default', name);
}

/**
 * An agent-pool plan from `from` to `to` over the pools of `clusters` (in that order), each cluster's read from its
 * member runtime's caches and sorted by name, as a bump across clusters plans it.
 */
export function planMemberPools(app: TestApp, clusters: readonly string[], strategy: AgentPoolStrategy, from: string, to: string) {
  return planAcrossClusters<AgentPoolStrategy>(clusters, async (cluster) => {
    const pools = await app.memberRuntimes!.queriesOf(cluster)!.agentPools!.all();
    return {
      kind: 'AGENT_POOL',
      fromVersion: from,
      toVersion: to,
      selector: {},
      strategy,
      targets: pools
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((p) => ({ namespace: p.namespace, name: p.name, fromVersion: p.recordedImage, toVersion: to })),
    };
  });
}

/** Waits until the rollout ended (SUCCEEDED or FAILED) and returns it. */
export function untilRolloutEnded(app: TestApp, id: string) {
  return until(
    'the rollout ended',
    async () => {
      const rollout = await app.domain.rollouts.get(id);
      return rollout && ['SUCCEEDED', 'FAILED'].includes(rollout.state) ? rollout : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

/** Resolves with the events the app's bus commits that `match` picks, once `done` says they are all there. */
export function collectEvents(app: TestApp, match: (e: StoredEvent) => boolean, done: (seen: StoredEvent[]) => boolean): Promise<StoredEvent[]> {
  const seen: StoredEvent[] = [];
  let unsubscribe = () => {};
  const promise = new Promise<StoredEvent[]>((resolve) => {
    unsubscribe = app.bus.subscribe((event) => {
      if (!match(event)) return;
      seen.push(event);
      if (done(seen)) resolve(seen);
    });
  });
  return promise.finally(() => unsubscribe());
}
