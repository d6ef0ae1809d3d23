import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { SimulatedClusters } from '../../src/sim/simulatedClusters.js';

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
