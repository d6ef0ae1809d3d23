import { bumpNodeAgentImage, nodeAgentSetCursor, pageNodeAgentSets, type NodeAgentQueries } from '../../domain/nodeAgents.js';
import { NotImplementedError, ValidationError } from '../../errors.js';
import { idempotencyScopeOf, type GraphQLContext } from '../context.js';
import type { Resolvers } from '../generated/resolvers.js';
import { bumpNodeAgentImageInput } from '../../domain/kinds/nodeAgent.js';
import { parseInput } from '../../domain/kinds/strategy.js';

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
    nodeAgentSets: (_, args, ctx) => {
      const page = pageNodeAgentSets(nodeAgents(ctx), args.first, args.after);
      const last = page.items[page.items.length - 1];
      return {
        edges: page.items.map((node) => ({ cursor: nodeAgentSetCursor(node), node })),
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? nodeAgentSetCursor(last) : null },
        totalCount: page.totalCount,
      };
    },
    nodeAgentSet: (_, args, ctx) => nodeAgents(ctx).getSet(checkName(args.namespace, 'namespace'), checkName(args.name, 'name')) ?? null,
  },
  Mutation: {
    bumpNodeAgentImage: (_, args, ctx) => bumpNodeAgentImage(ctx.domain, parseInput(bumpNodeAgentImageInput, args.input), idempotencyScopeOf(ctx)),
  },
};
