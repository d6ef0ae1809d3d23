import { scopedKey, starterOf } from '../../domain/RolloutLauncher.js';
import { principalName } from '../../auth/roles.js';
import { EventType, type EventFilter } from '../../domain/events.js';
import { toVersionText } from '../../domain/toVersionText.js';
import { checkPageSize, parseEventId } from '../../util/pagination.js';
import { isDns1123Label, namesProblem } from '../../util/dnsNames.js';
import { ValidationError } from '../../errors.js';
import { EVENT_SCAN_WINDOW } from '../../domain/historyPort.js';
import { connectionOf, connectionOfItems } from './connection.js';
import type { Progress, RolloutFilter } from '../../domain/RolloutService.js';
import { idempotencyScopeOf, type GraphQLContext } from '../context.js';
import type {
  CauseInput,
  Resolvers,
  RolloutFilter as RolloutFilterInput,
  SubscriptionEventsArgs,
  SubscriptionRolloutUpdatedArgs,
} from '../generated/resolvers.js';
import { eventEdge, eventToGraphQL, targetDurationSeconds } from './mappers.js';
import { eventFilterFrom, eventSubscription, optionalText, requireId } from './eventSubscription.js';
import { BatchLoader, perContext } from './batchLoader.js';
import { DateTime, JSONScalar } from './scalars.js';
import { clustersOfWave } from './waves.js';
import { rollbackInput } from '../../domain/kinds/cause.js';
import { parseInput } from '../../domain/kinds/strategy.js';

/** CauseInput → domain Cause (sizes and the runUrl scheme are checked at the edge: inputLimits.ts). */
export function causeFrom(cause: CauseInput | null | undefined) {
  return {
    actor: optionalText(cause?.actor) ?? null,
    runUrl: optionalText(cause?.runUrl) ?? null,
    commit: optionalText(cause?.commit) ?? null,
    message: optionalText(cause?.message) ?? null,
  };
}

/**
 * Rows of the history one page of `events` may look at (docs/adr/0032): a filter that an index serves exactly reads
 * only the page's own events; any other reads window by window, and the page stops after this many ids.
 */
const PAGE_SCAN_ROWS = 5 * EVENT_SCAN_WINDOW;

/**
 * A page of events oldest first; the cursor is the event id. A page whose reads stopped at PAGE_SCAN_ROWS holds fewer
 * than `first` events (none, possibly) while hasNextPage is true; its endCursor is then the last id it looked at,
 * past its last edge, so the next page does not look at those ids again.
 */
async function eventPage(ctx: GraphQLContext, filter: EventFilter, first: number | undefined, after: string | undefined) {
  const size = checkPageSize(first, 100);
  const afterId = parseEventId(after);
  const page = await ctx.domain.events.pageAfter(filter, afterId, size + 1, PAGE_SCAN_ROWS);
  const items = page.events.slice(0, size);
  const full = page.events.length > size;
  const lastEdge = items.length ? String(items[items.length - 1]!.id) : (after ?? null);
  return {
    edges: items.map(eventEdge),
    pageInfo: { hasNextPage: full || page.more, endCursor: !full && page.more ? String(page.scannedTo) : lastEdge },
  };
}

/** The longest version a filter takes: an image reference's practical bound, as RolloutFilter.version's limit. */
const MAX_VERSION_FILTER = 512;

function rolloutFilterFrom(filter: RolloutFilterInput | null | undefined): RolloutFilter {
  if (!filter) return {};
  return {
    ...(filter.kind ? { kind: filter.kind } : {}),
    ...(filter.states ? { states: [...new Set(filter.states)] } : {}),
    ...(filter.targetName ? { targetName: optionalText(filter.targetName) } : {}),
    ...(filter.clusters?.length ? { clusters: [...new Set(filter.clusters)] } : {}),
    ...(filter.version ? { version: filter.version } : {}),
    ...(filter.wave ? { wave: filter.wave } : {}),
    ...(filter.createdAfter ? { createdAfter: filter.createdAfter } : {}),
    ...(filter.createdBefore ? { createdBefore: filter.createdBefore } : {}),
    ...(filter.search ? { search: optionalText(filter.search) } : {}),
  };
}

/**
 * Progress read together with a rollouts page (RolloutService.list), keyed on the very rollout objects of that page:
 * they exist for this one request only, so nothing here can be served after it changed.
 */
const progressReadWithPage = perContext((_: GraphQLContext) => new WeakMap<object, Progress>());

/** A page's progress fields in one query (see BatchLoader). */
const progressLoader = perContext(
  (ctx: GraphQLContext) =>
    new BatchLoader(
      (ids: readonly string[]) => ctx.domain.rollouts.progressOf(ids),
      () => {
        // progressOf answers every id it is given.
        throw new Error('progressOf left out a rollout');
      },
    ),
);

export const coreResolvers: Resolvers = {
  DateTime,
  JSON: JSONScalar,

  Query: {
    serverInfo: async (_, __, ctx) => ({
      ...ctx.domain.facts,
      lastEventId: String(await ctx.domain.events.lastEventId()),
      caller: { name: principalName(ctx.principal), role: ctx.principal.role },
    }),
    rollouts: async (_, args, ctx) => {
      const filter = rolloutFilterFrom(args.filter);
      const [page, totalCount] = await Promise.all([ctx.domain.rollouts.list(filter, args.first, args.after ?? undefined), ctx.domain.rollouts.count(filter)]);
      const known = progressReadWithPage(ctx);
      for (const node of page.items) known.set(node, page.progress.get(node.id)!);
      return connectionOf({ ...page, items: page.items.map((node) => ({ cursor: ctx.domain.rollouts.cursorOf(node), node })), totalCount });
    },
    rollout: (_, args, ctx) => ctx.domain.rollouts.get(requireId(args.id)).then((r) => r ?? null),
    events: (_, args, ctx) => eventPage(ctx, eventFilterFrom(args.filter), args.first, args.after ?? undefined),
    workQueues: (_, __, ctx) => ctx.domain.workQueues(),
    apiTokens: async (_, args, ctx) => {
      const page = await ctx.domain.tokens.list(args.first, args.after ?? undefined);
      return connectionOfItems(page, (node) => ({ cursor: page.cursorOf(node), node }));
    },
    auditEntries: async (_, args, ctx) => {
      const page = await ctx.domain.audit.list(args.first, args.after ?? undefined);
      return connectionOfItems(page, (node) => ({ cursor: page.cursorOf(node), node }));
    },
  },

  Mutation: {
    pauseRollout: (_, args, ctx) => ctx.domain.rollouts.pause(requireId(args.id), optionalText(args.reason)),
    resumeRollout: (_, args, ctx) => ctx.domain.rollouts.resume(requireId(args.id)),
    abortRollout: (_, args, ctx) => ctx.domain.rollouts.abort(requireId(args.id), optionalText(args.reason)),
    rollbackRollout: async (_, args, ctx) => {
      const id = requireId(args.id);
      const input = parseInput(rollbackInput, args.input ?? {});
      const result = await ctx.domain.engine.rollback(id, {
        ...(input.cause ? { cause: causeFrom(input.cause) } : {}),
        idempotencyKey: scopedKey(idempotencyScopeOf(ctx), input.idempotencyKey),
        startedBy: starterOf(idempotencyScopeOf(ctx)),
      });
      return result.rollout;
    },
    createApiToken: (_, args, ctx) =>
      ctx.domain.tokens.create({ name: args.input.name, role: args.input.role, expiresInSeconds: args.input.expiresInSeconds ?? null }),
    revokeApiToken: (_, args, ctx) => ctx.domain.tokens.revoke(requireId(args.id)),
  },

  Subscription: {
    events: eventSubscription(undefined, (args: SubscriptionEventsArgs) => eventFilterFrom(args.filter), eventToGraphQL),
    rolloutUpdated: eventSubscription(
      [EventType.RolloutStateChanged, EventType.TargetStateChanged, EventType.TargetFailed],
      (args: SubscriptionRolloutUpdatedArgs) => eventFilterFrom(args.filter),
      async (event, ctx) => ({ event: eventToGraphQL(event), rollout: await ctx.domain.rollouts.require(event.rolloutId ?? '') }),
    ),
  },

  Rollout: {
    toVersion: (rollout) => toVersionText(rollout.toVersion),
    toEachPreviousRevision: (rollout) => rollout.toVersion === null,
    // Its kind's fields are resolved by the kind's graphql.ts (`RolloutStrategy`), the shared ones by name.
    strategy: (rollout) => rollout.strategy,
    rollbackOf: (rollout, _, ctx) => (rollout.rollbackOfId ? ctx.domain.rollouts.get(rollout.rollbackOfId).then((r) => r ?? null) : null),
    progress: (rollout, _, ctx) => progressReadWithPage(ctx).get(rollout) ?? progressLoader(ctx).load(rollout.id),
    targets: async (rollout, args, ctx) => {
      if (args.cluster != null) {
        const problem = namesProblem(isDns1123Label(args.cluster));
        if (problem) throw new ValidationError('cluster', `a member cluster's name is a DNS-1123 label: ${problem}`);
      }
      if (args.version != null && args.version.length > MAX_VERSION_FILTER) {
        throw new ValidationError('version', `must be at most ${MAX_VERSION_FILTER} characters (an image reference or a Kubernetes version)`);
      }
      const inWave = args.wave == null ? undefined : await clustersOfWave(ctx, rollout.id, args.wave);
      const clusters = args.cluster == null ? inWave : (inWave ?? [args.cluster]).filter((cluster) => cluster === args.cluster);
      const only = { ...(clusters ? { clusters } : {}), ...(args.version != null ? { version: args.version } : {}) };
      const page = await ctx.domain.rollouts.targets(rollout.id, args.state ?? undefined, args.first, args.after ?? undefined, only);
      return connectionOf({ ...page, items: page.items.map((node) => ({ cursor: ctx.domain.rollouts.targetCursor(node), node })) });
    },
    events: (rollout, args, ctx) => eventPage(ctx, { rolloutId: rollout.id }, args.first, args.after ?? undefined),
  },

  RolloutTarget: {
    durationSeconds: targetDurationSeconds,
  },
};
