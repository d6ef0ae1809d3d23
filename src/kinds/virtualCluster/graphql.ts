import { idempotencyScopeOf, type GraphQLContext } from '../../graphql/context.js';
import type { Domain } from '../../domain/Domain.js';
import { kindPortIn } from '../../domain/clusterSelection.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
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
  VIRTUAL_CLUSTER_PORT,
  type VirtualClusterView,
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

/**
 * The domain as one member cluster's caches answer it (`local`'s when none is named): its virtual-cluster port, each
 * VirtualCluster naming a member's cluster (ADR 0058).
 */
async function domainIn(ctx: GraphQLContext, cluster: string | null | undefined): Promise<Domain> {
  if (cluster == null || cluster === LOCAL_CLUSTER) return ctx.domain;
  const queries = await kindPortIn(ctx.domain, cluster, VIRTUAL_CLUSTER_PORT);
  const named = (vc: VirtualClusterView): VirtualClusterView => ({ ...vc, cluster });
  return {
    ...ctx.domain,
    virtualClusters: {
      ...queries,
      virtualClusters: async () => (await queries.virtualClusters()).map(named),
      virtualCluster: async (namespace, name) => {
        const vc = await queries.virtualCluster(namespace, name);
        return vc && named(vc);
      },
    },
  };
}

/** Resolvers for the virtualClusters part of the schema (merged with the others in index.ts). */
export const virtualClustersResolvers: Resolvers = {
  Query: {
    virtualClusters: async (_, args, ctx) => connectionOf(await listVirtualClusters(await domainIn(ctx, args.cluster), args.filter, args.first, args.after)),
    virtualCluster: async (_, args, ctx) =>
      (await getVirtualCluster(await domainIn(ctx, args.cluster), checkName(args.namespace, 'namespace'), checkName(args.name, 'name'))) ?? null,
    clusterVersions: async (_, args, ctx) => connectionOf(await listClusterVersions(await domainIn(ctx, args.cluster), args.first, args.after)),
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
    cluster: (vc) => vc.cluster ?? LOCAL_CLUSTER,
    lastUpgrade: async (vc, _, ctx) => {
      const event = await lastUpgradeOf(ctx.domain, vc.namespace, vc.name, vc.cluster);
      return event ? clusterUpgradeView(event) : null;
    },
    history: async (vc, args, ctx) => {
      return connectionOfItems(await clusterHistory(ctx.domain, vc.namespace, vc.name, args.first, parseEventId(args.after), vc.cluster), eventEdge);
    },
  },
};
