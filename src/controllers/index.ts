import type { Domain } from '../domain/Domain.js';
import type { RolloutDriver } from '../domain/ports.js';
import { setupAgentPools } from './agentpool/index.js';
import type { ControllerHost } from './host.js';
import { setupNodeAgents } from './nodeagent/index.js';
import { setupVirtualClusters } from './vcluster/index.js';

/** Domain query ports the rollout kinds provide (the optional fields of Domain that are not core). */
export type KindQueries = Partial<Omit<Domain, 'facts' | 'events' | 'rollouts' | 'launcher' | 'engine' | 'workQueues' | 'tokens' | 'audit'>>;

/**
 * Sets up every rollout kind's informers and controllers on the host, and returns their drivers (for the engine) and
 * query ports (for the API). The one place that lists the kinds.
 */
export function setupRolloutKinds(host: ControllerHost): { drivers: RolloutDriver[]; queries: KindQueries } {
  const drivers: RolloutDriver[] = [];
  const queries: KindQueries = {};
  const agentPools = setupAgentPools(host, { ...host.config.agentPools });
  drivers.push(agentPools.driver);
  queries.agentPools = agentPools.queries;
  const nodeAgents = setupNodeAgents(host, { ...host.config.nodeAgents });
  drivers.push(nodeAgents.driver);
  queries.nodeAgents = nodeAgents.queries;
  const virtualClusters = setupVirtualClusters(host, { ...host.config.virtualClusters });
  drivers.push(virtualClusters.driver);
  queries.virtualClusters = virtualClusters.queries;
  return { drivers, queries };
}
