import type { IResolvers } from '@graphql-tools/utils';
import {
  bumpNodeAgentImage,
  nodeAgentSetCursor,
  pageNodeAgentSets,
  type BumpNodeAgentImageInput,
  type NodeAgentQueries,
} from '../../domain/nodeAgents.js';
import { NotImplementedError, ValidationError } from '../../errors.js';
import type { GraphQLContext } from '../context.js';

type Args = Record<string, any>;

function nodeAgents(ctx: GraphQLContext): NodeAgentQueries {
  if (!ctx.domain.nodeAgents) throw new NotImplementedError('node agent sets (no node-agent controller runs in this rollplane)');
  return ctx.domain.nodeAgents;
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

/** Resolvers for the nodeAgents part of the schema (merged with the others in index.ts). */
export const nodeAgentsResolvers: IResolvers<unknown, GraphQLContext> = {
  Query: {
    nodeAgentSets: (_: unknown, args: Args, ctx: GraphQLContext) => {
      const page = pageNodeAgentSets(nodeAgents(ctx), args.first, args.after);
      const last = page.items[page.items.length - 1];
      return {
        edges: page.items.map((node) => ({ cursor: nodeAgentSetCursor(node), node })),
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? nodeAgentSetCursor(last) : null },
        totalCount: page.totalCount,
      };
    },
    nodeAgentSet: (_: unknown, args: Args, ctx: GraphQLContext) =>
      nodeAgents(ctx).getSet(checkName(args.namespace, 'namespace'), checkName(args.name, 'name')) ?? null,
  },
  Mutation: {
    bumpNodeAgentImage: (_: unknown, args: Args, ctx: GraphQLContext) => bumpNodeAgentImage(ctx.domain, args.input as BumpNodeAgentImageInput),
  },
};
