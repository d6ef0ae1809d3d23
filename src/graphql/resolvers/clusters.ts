import type { MemberClusterAdmin } from '../../domain/clusters/MemberClusterAdmin.js';
import type { MemberClusterRecord } from '../../domain/clusters/model.js';
import { UnavailableError, ValidationError } from '../../errors.js';
import type { GraphQLContext } from '../context.js';
import type { ClusterLabelInput, Resolvers } from '../generated/resolvers.js';
import type { MemberClusterModel } from './models.js';

/**
 * The member cluster registry over GraphQL (docs/adr/0056-clusters-api.md). Reads are a viewer's; the three mutations
 * are an admin's (auth/policy.ts), audited by the one mutation audit path with the kubeconfig redacted
 * (graphql/auditRedaction.ts). Nothing here can return a credential: MemberCluster has no field that holds one.
 */
export const clustersResolvers: Resolvers = {
  Query: {
    clusters: async (_, args, ctx) => (await admin(ctx).list({ names: args.names, selector: args.selector || null })).map(toGraphQL),
    cluster: async (_, args, ctx) => {
      const found = await admin(ctx).find(args.name);
      return found ? toGraphQL(found) : null;
    },
  },
  Mutation: {
    registerCluster: async (_, { input }, ctx) => {
      const registered = await admin(ctx).register({
        name: input.name,
        kubeconfig: input.kubeconfig,
        labels: labelsFrom(input.labels, 'input.labels'),
        verify: input.verify ?? false,
      });
      ctx.logger.info({ cluster: registered.name, labels: registered.labels }, 'member cluster registered through the API');
      return toGraphQL(registered);
    },
    updateClusterLabels: async (_, args, ctx) => toGraphQL(await admin(ctx).updateLabels(args.name, labelsFrom(args.labels, 'labels'), args.remove ?? [])),
    deregisterCluster: async (_, args, ctx) => {
      const removed = await admin(ctx).deregister(args.name);
      ctx.logger.info({ cluster: removed.name }, 'member cluster deregistered through the API');
      return toGraphQL(removed);
    },
  },
};

function admin(ctx: GraphQLContext): MemberClusterAdmin {
  if (!ctx.domain.clusters) throw new UnavailableError('the member cluster registry is not running on this server');
  return ctx.domain.clusters;
}

/** `[{ key, value }]` → a map; a key given twice is refused (which value would win is not the caller's to guess). */
function labelsFrom(list: readonly ClusterLabelInput[] | null | undefined, field: string): Record<string, string> {
  // No prototype: a key `__proto__` is then a key like any other, and refused as one (not silently dropped).
  const labels: Record<string, string> = Object.create(null);
  for (const { key, value } of list ?? []) {
    if (Object.hasOwn(labels, key)) throw new ValidationError(field, `label "${key}" is given twice`);
    labels[key] = value;
  }
  return labels;
}

function toGraphQL(record: MemberClusterRecord): MemberClusterModel {
  return {
    name: record.name,
    labels: Object.entries(record.labels).map(([key, value]) => ({ key, value })),
    source: record.source,
    sourceRef: record.sourceRef,
    health: {
      state: record.health.state,
      since: record.health.since,
      message: record.health.message,
      serverVersion: record.health.serverVersion,
    },
    kinds: record.health.kinds,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
