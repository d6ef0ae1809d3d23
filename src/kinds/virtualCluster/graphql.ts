import { idempotencyScopeOf } from '../../graphql/context.js';
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
} from './plan.js';
import { ValidationError } from '../../errors.js';
import type { Resolvers } from '../../graphql/generated/resolvers.js';
import { bumpClusterVersionInput } from './contract.js';
import { parseInput } from '../../domain/kinds/strategy.js';
import { connectionOf, connectionOfItems } from '../../graphql/resolvers/connection.js';
import { eventEdge } from '../../graphql/resolvers/mappers.js';
import { eventFilterFrom, eventSubscription } from '../../graphql/resolvers/eventSubscription.js';
import { EventType } from '../../domain/events.js';
import type { SubscriptionClusterUpgradeObservedArgs } from '../../graphql/generated/resolvers.js';
import { clusterUpgradeView, upgradeIsTo } from './eventViews.js';

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

/** Resolvers for the virtualClusters part of the schema (merged with the others in index.ts). */
export const virtualClustersResolvers: Resolvers = {
  Query: {
    virtualClusters: async (_, args, ctx) => connectionOf(await listVirtualClusters(ctx.domain, args.filter, args.first, args.after)),
    virtualCluster: async (_, args, ctx) => (await getVirtualCluster(ctx.domain, checkName(args.namespace, 'namespace'), checkName(args.name, 'name'))) ?? null,
    clusterVersions: async (_, args, ctx) => connectionOf(await listClusterVersions(ctx.domain, args.first, args.after)),
    clusterVersion: async (_, args, ctx) => (await getClusterVersion(ctx.domain, checkName(args.name, 'name'))) ?? null,
    clusterUpgradeDurations: (_, args, ctx) =>
      clusterUpgradeDurations(ctx.domain, args.clusterVersion == null ? undefined : checkName(args.clusterVersion, 'clusterVersion')),
  },

  Mutation: {
    bumpClusterVersion: (_, args, ctx) => bumpClusterVersion(ctx.domain, parseInput(bumpClusterVersionInput, args.input), idempotencyScopeOf(ctx)),
  },

  Subscription: {
    clusterUpgradeObserved: eventSubscription(
      [EventType.ClusterUpgradeObserved],
      (args: SubscriptionClusterUpgradeObservedArgs) => eventFilterFrom(args.filter),
      clusterUpgradeView,
      (args) => {
        const version = args.filter?.clusterVersion;
        return version ? (event) => upgradeIsTo(event, version) : undefined;
      },
    ),
  },

  VirtualCluster: {
    lastUpgrade: async (vc, _, ctx) => {
      const event = await lastUpgradeOf(ctx.domain, vc.namespace, vc.name);
      return event ? clusterUpgradeView(event) : null;
    },
    history: async (vc, args, ctx) => {
      return connectionOfItems(await clusterHistory(ctx.domain, vc.namespace, vc.name, args.first, parseEventId(args.after)), eventEdge);
    },
  },
};
