import { virtualClusterFigures } from './figures.js';
import { virtualClusterContract } from './contract.js';
import { virtualClustersResolvers } from './graphql.js';
import type { RolloutKindModule } from '../kindModule.js';
import { VIRTUAL_CLUSTER_EVENTS } from './events.js';
import { setupVirtualClusters } from './controller/index.js';

/** The VIRTUAL_CLUSTER rollout kind — virtual clusters (VirtualClusters and their ClusterVersion) — as registered (ADR 0041). */
export const virtualClusterKind: RolloutKindModule<'VIRTUAL_CLUSTER'> = {
  kind: 'VIRTUAL_CLUSTER',
  contract: virtualClusterContract,
  events: VIRTUAL_CLUSTER_EVENTS,
  resolvers: virtualClustersResolvers,
  // Read from the history's ClusterUpgradeObserved events alone.
  cachedRootFields: { history: ['clusterUpgradeDurations'] },
  drift: async (domain) => (await domain.virtualClusters?.driftItems()) ?? [],
  clusterFigures: async (ports) => (ports.virtualClusters ? virtualClusterFigures(ports.virtualClusters) : undefined),
  setup(host) {
    const runtime = setupVirtualClusters(host, { ...host.config.virtualClusters });
    return { driver: runtime.driver, queries: { virtualClusters: runtime.queries } };
  },
};
