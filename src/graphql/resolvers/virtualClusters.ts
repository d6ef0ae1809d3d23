import type { IResolvers } from '@graphql-tools/utils';
import { parseEventId } from '../../util/pagination.js';
import {
  bumpClusterVersion,
  clusterHistory,
  clusterUpgradeDurations,
  getClusterVersion,
  getVirtualCluster,
  lastUpgradeOf,
  listClusterVersions,
  listVirtualClusters,
  type BumpClusterVersionInput,
  type Connection,
  type VirtualClusterView,
} from '../../domain/virtualClusters.js';
import { ValidationError } from '../../errors.js';
import type { GraphQLContext } from '../context.js';
import { clusterUpgradeToGraphQL, eventEdge } from './mappers.js';

type Args = Record<string, any>;

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

function connection<T>(page: Connection<T>) {
  return { edges: page.items, pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor }, totalCount: page.totalCount };
}

/** Resolvers for the virtualClusters part of the schema (merged with the others in index.ts). */
export const virtualClustersResolvers: IResolvers<unknown, GraphQLContext> = {
  Query: {
    virtualClusters: async (_: unknown, args: Args, ctx: GraphQLContext) => connection(await listVirtualClusters(ctx.domain, args.filter, args.first, args.after)),
    virtualCluster: async (_: unknown, args: Args, ctx: GraphQLContext) =>
      (await getVirtualCluster(ctx.domain, checkName(args.namespace, 'namespace'), checkName(args.name, 'name'))) ?? null,
    clusterVersions: async (_: unknown, args: Args, ctx: GraphQLContext) => connection(await listClusterVersions(ctx.domain, args.first, args.after)),
    clusterVersion: async (_: unknown, args: Args, ctx: GraphQLContext) => (await getClusterVersion(ctx.domain, checkName(args.name, 'name'))) ?? null,
    clusterUpgradeDurations: (_: unknown, args: Args, ctx: GraphQLContext) =>
      clusterUpgradeDurations(ctx.domain, args.clusterVersion == null ? undefined : checkName(args.clusterVersion, 'clusterVersion')),
  },

  Mutation: {
    bumpClusterVersion: (_: unknown, args: Args, ctx: GraphQLContext) => bumpClusterVersion(ctx.domain, args.input as BumpClusterVersionInput),
  },

  VirtualCluster: {
    lastUpgrade: async (vc: VirtualClusterView, _: Args, ctx: GraphQLContext) => {
      const event = await lastUpgradeOf(ctx.domain, vc.namespace, vc.name);
      return event ? clusterUpgradeToGraphQL(event) : null;
    },
    history: async (vc: VirtualClusterView, args: Args, ctx: GraphQLContext) => {
      const page = await clusterHistory(ctx.domain, vc.namespace, vc.name, args.first, parseEventId(args.after));
      return {
        edges: page.items.map(eventEdge),
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.items.length ? String(page.items[page.items.length - 1]!.id) : null },
      };
    },
  },
};
