import { bumpNodeAgentImage, pageNodeAgentSets, type NodeAgentQueries } from './plan.js';
import { connectionOf } from '../../graphql/resolvers/connection.js';
import { NotImplementedError, ValidationError } from '../../errors.js';
import { idempotencyScopeOf, type GraphQLContext } from '../../graphql/context.js';
import type { Resolvers } from '../../graphql/generated/resolvers.js';
import { bumpNodeAgentImageInput, NODE_AGENT } from './contract.js';
import { parseInput } from '../../domain/kinds/strategy.js';
import { EventType } from '../../domain/events.js';
import { nodeAgentReplacementView } from './eventViews.js';

function nodeAgents(ctx: GraphQLContext): NodeAgentQueries {
  if (!ctx.domain.nodeAgents) throw new NotImplementedError('node agent sets (no node-agent controller runs in this rollplane)');
  return ctx.domain.nodeAgents;
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

/** Resolvers for the nodeAgents part of the schema (merged with the others in index.ts). */
export const nodeAgentsResolvers: Resolvers = {
  Query: {
    nodeAgentSets: (_, args, ctx) => connectionOf(pageNodeAgentSets(nodeAgents(ctx), args.first, args.after)),
    nodeAgentSet: (_, args, ctx) => nodeAgents(ctx).getSet(checkName(args.namespace, 'namespace'), checkName(args.name, 'name')) ?? null,
  },
  Mutation: {
    bumpNodeAgentImage: (_, args, ctx) => bumpNodeAgentImage(ctx.domain, parseInput(bumpNodeAgentImageInput, args.input), idempotencyScopeOf(ctx)),
  },

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
