import { readPayload } from '../../domain/eventPayloads.js';
import { AGENT_POOL_PORT, bumpAgentImage, listAgentPools, type AgentPoolQueries, type AgentPoolView } from './plan.js';
import { EventType } from '../../domain/events.js';
import { checkPageSize, pageOfRows, parseEventId } from '../../util/pagination.js';
import { connectionOf, connectionOfItems } from '../../graphql/resolvers/connection.js';
import { ValidationError } from '../../errors.js';
import { kindPortIn } from '../../domain/clusterSelection.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import { idempotencyScopeOf, type GraphQLContext } from '../../graphql/context.js';
import type { Resolvers } from '../../graphql/generated/resolvers.js';
import { eventEdge } from '../../graphql/resolvers/mappers.js';
import { eventFilterFrom, eventSubscription } from '../../graphql/resolvers/eventSubscription.js';
import type { SubscriptionAgentRecreatedArgs } from '../../graphql/generated/resolvers.js';
import { agentRecreatedView } from './eventViews.js';
import { bumpAgentImageInput } from './contract.js';
import { parseInput } from '../../domain/kinds/strategy.js';

/** The pools of one member cluster (its caches; `local` when none is named), each view naming a member's cluster. */
async function poolsIn(ctx: GraphQLContext, cluster: string | null | undefined): Promise<AgentPoolQueries> {
  const queries = await kindPortIn(ctx.domain, cluster, AGENT_POOL_PORT);
  if (cluster == null || cluster === LOCAL_CLUSTER) return queries;
  const named = (pool: AgentPoolView): AgentPoolView => ({ ...pool, cluster });
  return {
    ...queries,
    all: async () => (await queries.all()).map(named),
    get: async (namespace, name) => {
      const pool = await queries.get(namespace, name);
      return pool && named(pool);
    },
  };
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) throw new ValidationError(field, 'must be 1 to 253 characters');
  return value;
}

/**
 * The pool's events, newest first; the cursor is the event id (`after` = older than it). One indexed statement per
 * page ((kind, namespace, name, id) walked backwards): it used to read the pool's whole history to return one page.
 */
async function poolHistory(ctx: GraphQLContext, pool: AgentPoolView, first: number | undefined, after: string | undefined) {
  const size = checkPageSize(first, 50);
  const before = parseEventId(after);
  const filter = { kind: 'AGENT_POOL' as const, namespace: pool.namespace, name: pool.name, ...(pool.cluster ? { cluster: pool.cluster } : {}) };
  return connectionOfItems(pageOfRows(await ctx.domain.events.listBefore(filter, before, size + 1), size), eventEdge);
}

/** Resolvers for the agentPools part of the schema (merged with the others in index.ts). */
export const agentPoolsResolvers: Resolvers = {
  Query: {
    agentPools: async (_, args, ctx) => connectionOf(await listAgentPools(await poolsIn(ctx, args.cluster), args.filter, args.first, args.after)),
    agentPool: async (_, args, ctx) =>
      (await (await poolsIn(ctx, args.cluster)).get(checkName(args.namespace, 'namespace'), checkName(args.name, 'name'))) ?? null,
  },

  Mutation: {
    // Validated before anything else: bad input is BAD_USER_INPUT even where no agent-pool controller runs.
    bumpAgentImage: (_, args, ctx) => {
      const input = parseInput(bumpAgentImageInput, args.input);
      return bumpAgentImage(ctx.domain, input, idempotencyScopeOf(ctx));
    },
  },

  Subscription: {
    agentRecreated: eventSubscription([EventType.AgentRecreated], (args: SubscriptionAgentRecreatedArgs) => eventFilterFrom(args.filter), agentRecreatedView),
  },

  AgentPool: {
    cluster: (pool) => pool.cluster ?? LOCAL_CLUSTER,
    revisions: async (pool, args, ctx) => {
      const page = await ctx.domain.rollouts.revisions('AGENT_POOL', pool.namespace, pool.name, args.first, args.after ?? undefined, pool.cluster);
      const items = page.items.map((r) => ({ cursor: r.cursor, node: { n: r.n, version: r.version, rolloutId: r.rolloutId, appliedAt: r.appliedAt } }));
      return connectionOf({ ...page, items });
    },
    history: (pool, args, ctx) => poolHistory(ctx, pool, args.first, args.after ?? undefined),
  },

  Revision: {
    rollout: (revision, _, ctx) => (revision.rolloutId ? ctx.domain.rollouts.get(revision.rolloutId).then((r) => r ?? null) : null),
  },

  Rollout: {
    // The controller's image this rollout set, replaced outside rollplane (ControllerImageReconciler records it with
    // the rollout's id and `reverts`).
    revertedOutsideRollplane: async (rollout, _, ctx) => {
      if (rollout.kind !== 'AGENT_POOL') return [];
      const events = await ctx.domain.events.listAfter({ rolloutId: rollout.id, types: [EventType.UpstreamControllerChanged] }, undefined, 100);
      return events
        .map((e) => ({ at: e.createdAt, p: readPayload(EventType.UpstreamControllerChanged, e.payload) }))
        .filter(({ p }) => p.planned === false && p.reverts === rollout.id)
        .map(({ at, p }) => ({ at, fromVersion: String(p.oldImage), toVersion: String(p.newImage), owner: p.owner ?? null }));
    },
  },
};
