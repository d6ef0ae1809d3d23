/**
 * The registered rollout kinds' settings (ADR 0051): the settings' list of kinds, which src/config.ts composes into the
 * configuration table. Apart from the server's list (src/kinds/index.ts) so that configuration, which the CLI and every
 * server module read, loads only the kinds' `settings.ts` (their rows), not their controllers; a test checks that it
 * lists every kind folder.
 */
import { AGENT_POOL_SETTINGS } from './agentPool/settings.js';
import { NODE_AGENT_SETTINGS } from './nodeAgent/settings.js';
import { VIRTUAL_CLUSTER_SETTINGS } from './virtualCluster/settings.js';

/** Each kind's group of rows under its key in `Config`, in the order of README's table and `--help`. */
export const KIND_SETTINGS = {
  agentPools: AGENT_POOL_SETTINGS,
  nodeAgents: NODE_AGENT_SETTINGS,
  virtualClusters: VIRTUAL_CLUSTER_SETTINGS,
};
