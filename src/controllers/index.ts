import type { Domain } from '../domain/Domain.js';
import type { RolloutDriver } from '../domain/ports.js';
import { setupAgentPools, type AgentPoolOptions } from './agentpool/index.js';
import type { ControllerHost } from './host.js';
import { setupNodeAgents, type NodeAgentOptions } from './nodeagent/index.js';
import { setupVirtualClusters, type VirtualClusterOptions } from './vcluster/index.js';

/** Domain query ports the rollout kinds provide (the optional fields of Domain that are not core). */
export type KindQueries = Partial<Omit<Domain, 'facts' | 'events' | 'rollouts' | 'launcher' | 'engine' | 'workQueues' | 'tokens' | 'audit'>>;

/**
 * Sets up every rollout kind's informers and controllers on the host, and returns their drivers (for the engine) and
 * query ports (for the API). The one place that lists the kinds.
 */
export function setupRolloutKinds(host: ControllerHost): { drivers: RolloutDriver[]; queries: KindQueries } {
  const drivers: RolloutDriver[] = [];
  const queries: KindQueries = {};
  // Agent pools: settings from `config.agentPools` when the config has them (see the agent-pool report), else defaults.
  const agentPools = setupAgentPools(host, (host.config as { agentPools?: AgentPoolOptions }).agentPools ?? {});
  drivers.push(agentPools.driver);
  queries.agentPools = agentPools.queries;
  // Node agents: settings from `config.nodeAgents` when the config has them (see the node-agent report), else defaults.
  const nodeAgents = setupNodeAgents(host, (host.config as { nodeAgents?: NodeAgentOptions }).nodeAgents ?? {});
  drivers.push(nodeAgents.driver);
  queries.nodeAgents = nodeAgents.queries;
  // Virtual clusters: settings from `config.virtualClusters` when the config has them (see the vcluster report), else defaults.
  const virtualClusters = setupVirtualClusters(host, (host.config as { virtualClusters?: VirtualClusterOptions }).virtualClusters ?? {});
  drivers.push(virtualClusters.driver);
  queries.virtualClusters = virtualClusters.queries;
  return { drivers, queries };
}
