import { bumpNodeAgentImage, NODE_AGENT_PORT, pageNodeAgentSets, type NodeAgentQueries, type NodeAgentSet } from './plan.js';
import { kindPortIn } from '../../domain/clusterSelection.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import { connectionOf } from '../../graphql/resolvers/connection.js';
import { NotImplementedError, ValidationError } from '../../errors.js';
import { idempotencyScopeOf, type GraphQLContext } from '../../graphql/context.js';
import type { Resolvers } from '../../graphql/generated/resolvers.js';
import { bumpNodeAgentImageInput, NODE_AGENT } from './contract.js';
import { parseInput } from '../../domain/kinds/strategy.js';
import { EventType } from '../../domain/events.js';
import { nodeAgentReplacementView } from './eventViews.js';

/** The node-agent sets of one member cluster (its caches; `local` when none is named), each naming a member's cluster. */
async function nodeAgentsIn(ctx: GraphQLContext, cluster: string | null | undefined): Promise<NodeAgentQueries> {
  const queries = await kindPortIn(ctx.domain, cluster, {
    ...NODE_AGENT_PORT,
    missingLocal: () => new NotImplementedError('node agent sets (no node-agent controller runs in this rollplane)'),
  });
  if (cluster == null || cluster === LOCAL_CLUSTER) return queries;
  const named = (set: NodeAgentSet): NodeAgentSet => ({ ...set, cluster });
  return {
    ...queries,
    listSets: () => queries.listSets().map(named),
    getSet: (namespace, name) => {
      const set = queries.getSet(namespace, name);
      return set && named(set);
    },
  };
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

/** Resolvers for the nodeAgents part of the schema (merged with the others in index.ts). */
export const nodeAgentsResolvers: Resolvers = {
  Query: {
    nodeAgentSets: async (_, args, ctx) => connectionOf(pageNodeAgentSets(await nodeAgentsIn(ctx, args.cluster), args.first, args.after)),
    nodeAgentSet: async (_, args, ctx) =>
      (await nodeAgentsIn(ctx, args.cluster)).getSet(checkName(args.namespace, 'namespace'), checkName(args.name, 'name')) ?? null,
  },
  Mutation: {
    bumpNodeAgentImage: (_, args, ctx) => bumpNodeAgentImage(ctx.domain, parseInput(bumpNodeAgentImageInput, args.input), idempotencyScopeOf(ctx)),
  },

  NodeAgentSet: { cluster: (set) => set.cluster ?? LOCAL_CLUSTER },

  // This kind's fields of a rollout's strategy (the shared ones resolve by name); null on the other kinds' rollouts.
  RolloutStrategy: {
    mode: (strategy) => (strategy.kind === NODE_AGENT ? strategy.mode : null),
    minReadySeconds: (strategy) => (strategy.kind === NODE_AGENT ? strategy.minReadySeconds : null),
  },

  // Its typed field of a shared type (ADR 0046): the node-agent feed's payload; null on other events.
  Event: {
    nodeAgentReplacement: (event) => (event.type === EventType.NodeAgentReplaced ? nodeAgentReplacementView(event) : null),
  },
};
