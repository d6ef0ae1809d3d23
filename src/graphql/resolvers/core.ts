import type { IResolvers } from '@graphql-tools/utils';
import { ValidationError } from '../../errors.js';
import { EventType, type EventFilter, type RolloutKind, type StoredEvent } from '../../domain/events.js';
import { checkPageSize, parseEventId } from '../../util/pagination.js';
import type { Rollout, RolloutFilter } from '../../domain/RolloutService.js';
import type { RolloutState, TargetState } from '../../domain/rolloutStates.js';
import type { GraphQLContext } from '../context.js';
import {
  agentRecreatedToGraphQL,
  clusterUpgradeToGraphQL,
  eventEdge,
  eventToGraphQL,
  strategyToGraphQL,
  targetDurationSeconds,
} from './mappers.js';
import { DateTime, JSONScalar } from './scalars.js';

type Args = Record<string, any>;


const MAX_ID_LENGTH = 200;

function requireId(id: string, field = 'id'): string {
  if (id.length === 0 || id.length > MAX_ID_LENGTH) throw new ValidationError(field, `must be 1 to ${MAX_ID_LENGTH} characters`);
  // Ids rollplane hands out are printable ASCII; anything else is a mistake worth saying so.
  if (!/^[\x21-\x7e]+$/.test(id)) throw new ValidationError(field, 'must be printable ASCII without spaces or control characters');
  return id;
}

/** An optional string input; its size is bounded at the edge (inputLimits.ts) before any resolver runs. */
function optionalText(value: string | null | undefined): string | undefined {
  return value ?? undefined;
}

function connection<T>(items: T[], hasNextPage: boolean, cursorOf: (item: T) => string) {
  const edges = items.map((node) => ({ cursor: cursorOf(node), node }));
  return { edges, pageInfo: { hasNextPage, endCursor: edges.length ? edges[edges.length - 1]!.cursor : null } };
}

/** CauseInput → domain Cause (sizes and the runUrl scheme are checked at the edge: inputLimits.ts). */
export function causeFrom(cause: Args | null | undefined) {
  return {
    actor: optionalText(cause?.actor) ?? null,
    runUrl: optionalText(cause?.runUrl) ?? null,
    commit: optionalText(cause?.commit) ?? null,
    message: optionalText(cause?.message) ?? null,
  };
}

function eventFilterFrom(filter: Args | null | undefined): EventFilter {
  if (!filter) return {};
  return {
    // Deduplicated: a list of the same enum value repeated a thousand times is still one condition.
    ...(filter.types ? { types: [...new Set(filter.types as EventType[])] } : {}),
    ...(filter.rolloutId != null ? { rolloutId: requireId(filter.rolloutId, 'filter.rolloutId') } : {}),
    ...(filter.kind != null ? { kind: filter.kind } : {}),
    ...(filter.namespace != null ? { namespace: optionalText(filter.namespace) } : {}),
    ...(filter.name != null ? { name: optionalText(filter.name) } : {}),
    ...(filter.since != null ? { since: filter.since } : {}),
  };
}

async function eventPage(ctx: GraphQLContext, filter: EventFilter, first: number | undefined, after: string | undefined) {
  const size = checkPageSize(first, 100);
  const afterId = parseEventId(after);
  const rows = await ctx.domain.events.listAfter(filter, afterId, size + 1);
  const items = rows.slice(0, size);
  return {
    edges: items.map(eventEdge),
    pageInfo: { hasNextPage: rows.length > size, endCursor: items.length ? String(items[items.length - 1]!.id) : (after ?? null) },
  };
}

function rolloutFilterFrom(filter: Args | null | undefined): RolloutFilter {
  if (!filter) return {};
  return {
    ...(filter.kind ? { kind: filter.kind as RolloutKind } : {}),
    ...(filter.states ? { states: [...new Set(filter.states as RolloutState[])] } : {}),
    ...(filter.targetName ? { targetName: optionalText(filter.targetName) } : {}),
    ...(filter.createdAfter ? { createdAfter: filter.createdAfter } : {}),
    ...(filter.createdBefore ? { createdBefore: filter.createdBefore } : {}),
    ...(filter.search ? { search: optionalText(filter.search) } : {}),
  };
}

function subscription<T>(
  types: readonly EventType[] | undefined,
  filterOf: (args: Args) => EventFilter,
  resolve: (event: StoredEvent, ctx: GraphQLContext) => T | Promise<T>,
  predicateOf?: (args: Args) => ((event: StoredEvent) => boolean) | undefined,
) {
  return {
    subscribe: (_: unknown, args: Args, ctx: GraphQLContext) => {
      const after = parseEventId(args.after);
      const base = filterOf(args);
      const filter: EventFilter = types ? { ...base, types: base.types?.length ? base.types.filter((t) => types.includes(t)) : types } : base;
      const predicate = predicateOf?.(args);
      return ctx.domain.events.stream({ filter, ...(predicate ? { predicate } : {}), ...(after !== undefined ? { after } : {}) });
    },
    resolve: (event: StoredEvent, _: Args, ctx: GraphQLContext) => resolve(event, ctx),
  };
}

export const coreResolvers: IResolvers<unknown, GraphQLContext> = {
  DateTime,
  JSON: JSONScalar,

  Query: {
    serverInfo: async (_: unknown, __: Args, ctx: GraphQLContext) => ({
      ...ctx.domain.facts,
      lastEventId: String(await ctx.domain.events.lastEventId()),
    }),
    rollouts: async (_: unknown, args: Args, ctx: GraphQLContext) => {
      const filter = rolloutFilterFrom(args.filter);
      const [page, totalCount] = await Promise.all([
        ctx.domain.rollouts.list(filter, args.first, args.after ?? undefined),
        ctx.domain.rollouts.count(filter),
      ]);
      return {
        edges: page.items.map((node) => ({ cursor: ctx.domain.rollouts.cursorOf(node), node })),
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor },
        totalCount,
      };
    },
    rollout: (_: unknown, args: Args, ctx: GraphQLContext) => ctx.domain.rollouts.get(requireId(args.id)).then((r) => r ?? null),
    events: (_: unknown, args: Args, ctx: GraphQLContext) => eventPage(ctx, eventFilterFrom(args.filter), args.first, args.after ?? undefined),
    workQueues: (_: unknown, __: Args, ctx: GraphQLContext) => ctx.domain.workQueues(),
    apiTokens: async (_: unknown, args: Args, ctx: GraphQLContext) => {
      const page = await ctx.domain.tokens.list(args.first, args.after ?? undefined);
      return connection(page.items, page.hasNextPage, page.cursorOf);
    },
    auditEntries: async (_: unknown, args: Args, ctx: GraphQLContext) => {
      const page = await ctx.domain.audit.list(args.first, args.after ?? undefined);
      return connection(page.items, page.hasNextPage, page.cursorOf);
    },
  },

  Mutation: {
    pauseRollout: (_: unknown, args: Args, ctx: GraphQLContext) =>
      ctx.domain.rollouts.pause(requireId(args.id), optionalText(args.reason)),
    resumeRollout: (_: unknown, args: Args, ctx: GraphQLContext) => ctx.domain.rollouts.resume(requireId(args.id)),
    abortRollout: (_: unknown, args: Args, ctx: GraphQLContext) =>
      ctx.domain.rollouts.abort(requireId(args.id), optionalText(args.reason)),
    rollbackRollout: async (_: unknown, args: Args, ctx: GraphQLContext) => {
      const cause = args.input?.cause ?? undefined;
      const result = await ctx.domain.engine.rollback(requireId(args.id), {
        ...(cause ? { cause: causeFrom(cause) } : {}),
        idempotencyKey: optionalText(args.input?.idempotencyKey) ?? null,
      });
      return result.rollout;
    },
    createApiToken: (_: unknown, args: Args, ctx: GraphQLContext) =>
      ctx.domain.tokens.create({ name: String(args.input.name), role: args.input.role, expiresInSeconds: args.input.expiresInSeconds ?? null }),
    revokeApiToken: (_: unknown, args: Args, ctx: GraphQLContext) => ctx.domain.tokens.revoke(requireId(args.id)),
  },

  Subscription: {
    events: subscription(undefined, (args) => eventFilterFrom(args.filter), eventToGraphQL),
    agentRecreated: subscription(
      [EventType.AgentRecreated],
      (args) => eventFilterFrom(args.filter),
      agentRecreatedToGraphQL,
    ),
    clusterUpgradeObserved: subscription(
      [EventType.ClusterUpgradeObserved],
      (args) => eventFilterFrom(args.filter),
      clusterUpgradeToGraphQL,
      (args) => {
        const version = args.filter?.clusterVersion;
        return version ? (event) => event.payload.clusterVersion === version : undefined;
      },
    ),
    rolloutUpdated: subscription(
      [EventType.RolloutStateChanged, EventType.TargetStateChanged, EventType.TargetFailed],
      (args) => eventFilterFrom(args.filter),
      async (event, ctx) => ({ event: eventToGraphQL(event), rollout: await ctx.domain.rollouts.require(event.rolloutId ?? '') }),
    ),
  },

  Rollout: {
    strategy: (rollout: Rollout) => strategyToGraphQL(rollout),
    rollbackOf: (rollout: Rollout, _: Args, ctx: GraphQLContext) =>
      rollout.rollbackOfId ? ctx.domain.rollouts.get(rollout.rollbackOfId).then((r) => r ?? null) : null,
    progress: (rollout: Rollout, _: Args, ctx: GraphQLContext) => ctx.domain.rollouts.progress(rollout.id),
    targets: async (rollout: Rollout, args: Args, ctx: GraphQLContext) => {
      const page = await ctx.domain.rollouts.targets(rollout.id, (args.state ?? undefined) as TargetState | undefined, args.first, args.after ?? undefined);
      return {
        edges: page.items.map((node) => ({ cursor: ctx.domain.rollouts.targetCursor(node), node })),
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor },
        totalCount: page.totalCount,
      };
    },
    events: (rollout: Rollout, args: Args, ctx: GraphQLContext) => eventPage(ctx, { rolloutId: rollout.id }, args.first, args.after ?? undefined),
  },

  RolloutTarget: {
    durationSeconds: targetDurationSeconds,
  },
};
