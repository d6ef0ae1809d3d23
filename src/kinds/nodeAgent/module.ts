import { nodeAgentFigures } from './figures.js';
import { nodeAgentContract } from './contract.js';
import { nodeAgentsResolvers } from './graphql.js';
import type { RolloutKindModule } from '../kindModule.js';
import { NODE_AGENT_EVENTS } from './events.js';
import { setupNodeAgents } from './controller/index.js';

/** The NODE_AGENT rollout kind — node agents (DaemonSets on nodes) — as registered (ADR 0041). */
export const nodeAgentKind: RolloutKindModule<'NODE_AGENT'> = {
  kind: 'NODE_AGENT',
  contract: nodeAgentContract,
  events: NODE_AGENT_EVENTS,
  resolvers: nodeAgentsResolvers,
  drift: async (domain) => (await domain.nodeAgents?.driftItems()) ?? [],
  clusterFigures: async (ports) => (ports.nodeAgents ? nodeAgentFigures(ports.nodeAgents) : undefined),
  listSizes: (domain) => ({
    // Every node that runs the agent: the largest set's (a cluster of 5,000 nodes is 5,000 items, not 10).
    'NodeAgentSet.nodes': () => Math.max(0, ...(domain.nodeAgents?.listSets().map((set) => set.nodes.length) ?? [])),
  }),
  setup(host) {
    const runtime = setupNodeAgents(host, { ...host.config.nodeAgents });
    return { driver: runtime.driver, queries: { nodeAgents: runtime.queries } };
  },
};
