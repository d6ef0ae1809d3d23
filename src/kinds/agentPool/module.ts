import { agentPoolFigures } from './figures.js';
import { agentPoolsWithHistory, sharedAgentPoolChoices } from './choices.js';
import { agentPoolContract } from './contract.js';
import { agentPoolsResolvers } from './graphql.js';
import { agentPoolDrift } from './plan.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import type { RolloutKindModule } from '../kindModule.js';
import { AGENT_POOL_EVENTS } from './events.js';
import { setupAgentPools } from './controller/index.js';

/** The AGENT_POOL rollout kind — agent pools (IPPools' DHCP agents) — as registered (ADR 0041). */
export const agentPoolKind: RolloutKindModule<'AGENT_POOL'> = {
  kind: 'AGENT_POOL',
  contract: agentPoolContract,
  events: AGENT_POOL_EVENTS,
  resolvers: agentPoolsResolvers,
  // Its views read the informers' caches (IPPools, agent pods, the controller's Deployment) and the history only.
  cachedRootFields: { cluster: ['agentPools', 'agentPool'] },
  drift: async (domain) => (domain.agentPools ? agentPoolDrift(domain.agentPools) : []),
  clusterFigures: async (ports) => (ports.agentPools ? agentPoolFigures(ports.agentPools) : undefined),
  setup(host) {
    const runtime = setupAgentPools(host, { ...host.config.agentPools });
    // What each pool should run comes from the history (what rollouts decided), not from the controller's --image.
    const agentPools = host.rollouts
      ? agentPoolsWithHistory(runtime.queries, sharedAgentPoolChoices(host.rollouts, host.events), host.cluster ?? LOCAL_CLUSTER)
      : runtime.queries;
    return { driver: runtime.driver, queries: { agentPools } };
  },
};
