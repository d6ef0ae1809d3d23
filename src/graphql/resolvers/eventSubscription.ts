import { ValidationError } from '../../errors.js';
import { clusterOfEvent, type EventFilter, type EventType, type StoredEvent } from '../../domain/events.js';
import { parseEventId } from '../../util/pagination.js';
import type { GraphQLContext } from '../context.js';
import type { EventFilter as EventFilterInput } from '../generated/resolvers.js';

/**
 * The shared way a subscription on the history is built (ADR 0051): the core's (`events`, `rolloutUpdated`) and each
 * kind's (its `graphql.ts`: agent recreations, cluster upgrades) use it, so a kind's subscription is one field of its
 * resolvers, and no shared resolver names it.
 */

const MAX_ID_LENGTH = 200;

export function requireId(id: string, field = 'id'): string {
  if (id.length === 0 || id.length > MAX_ID_LENGTH) throw new ValidationError(field, `must be 1 to ${MAX_ID_LENGTH} characters`);
  // Ids rollplane hands out are printable ASCII; anything else is a mistake worth saying so.
  if (!/^[\x21-\x7e]+$/.test(id)) throw new ValidationError(field, 'must be printable ASCII without spaces or control characters');
  return id;
}

/** An optional string input; its size is bounded at the edge (inputLimits.ts) before any resolver runs. */
export function optionalText(value: string | null | undefined): string | undefined {
  return value ?? undefined;
}

/**
 * The event conditions of any subscription or query filter: EventFilter has them all; a kind's subscription filters
 * and RolloutUpdateFilter have a subset (their other fields are read by their own resolver).
 */
export type EventConditions = Partial<Pick<EventFilterInput, 'types' | 'rolloutId' | 'kind' | 'namespace' | 'name' | 'cluster' | 'since'>>;

export function eventFilterFrom(filter: EventConditions | null | undefined): EventFilter {
  if (!filter) return {};
  return {
    // Deduplicated: a list of the same enum value repeated a thousand times is still one condition.
    ...(filter.types ? { types: [...new Set(filter.types)] } : {}),
    ...(filter.rolloutId != null ? { rolloutId: requireId(filter.rolloutId, 'filter.rolloutId') } : {}),
    ...(filter.kind != null ? { kind: filter.kind } : {}),
    ...(filter.namespace != null ? { namespace: optionalText(filter.namespace) } : {}),
    ...(filter.name != null ? { name: optionalText(filter.name) } : {}),
    ...(filter.cluster != null ? { cluster: optionalText(filter.cluster) } : {}),
    ...(filter.since != null ? { since: filter.since } : {}),
  };
}

/** Subscription arguments all have `after` (the event id to resume from). */
interface ResumableArgs {
  after?: string | null | undefined;
  /** A subscription's filter may name member clusters to follow (ADR 0058): events about objects in any of them. */
  filter?: object | null | undefined;
}

/** The member clusters a subscription's filter follows, when its input type has `clusters`. */
function clustersOf(filter: object | null | undefined): readonly string[] | undefined {
  const clusters = filter && 'clusters' in filter ? filter.clusters : undefined;
  return Array.isArray(clusters) ? clusters.filter((c): c is string => typeof c === 'string') : undefined;
}

/** The events about objects in any of `clusters` (a rollout's own events name none and are left out); undefined: all. */
function inClusters(clusters: readonly string[] | null | undefined): ((event: StoredEvent) => boolean) | undefined {
  if (!clusters?.length) return undefined;
  const wanted = new Set(clusters);
  return (event) => {
    const cluster = clusterOfEvent(event);
    return cluster !== null && wanted.has(cluster);
  };
}

/**
 * A subscription field over the history: the events of `types` (all when undefined) that match the filter its
 * arguments give and, if given, the predicate they give, from `after` on, each resolved to what the field returns.
 */
export function eventSubscription<TArgs extends ResumableArgs, T>(
  types: readonly EventType[] | undefined,
  filterOf: (args: TArgs) => EventFilter,
  resolve: (event: StoredEvent, ctx: GraphQLContext) => T | Promise<T>,
  predicateOf?: (args: TArgs) => ((event: StoredEvent) => boolean) | undefined,
) {
  return {
    subscribe: (_: unknown, args: TArgs, ctx: GraphQLContext) => {
      const after = parseEventId(args.after);
      const base = filterOf(args);
      const filter: EventFilter = types ? { ...base, types: base.types?.length ? base.types.filter((t) => types.includes(t)) : types } : base;
      const own = predicateOf?.(args);
      const clusters = inClusters(clustersOf(args.filter));
      const predicate = own && clusters ? (event: StoredEvent) => clusters(event) && own(event) : (own ?? clusters);
      return ctx.domain.events.stream({
        filter,
        ...(predicate ? { predicate } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(ctx.chargeReplay ? { chargeReplay: ctx.chargeReplay } : {}),
      });
    },
    resolve: (event: StoredEvent, _: TArgs, ctx: GraphQLContext) => resolve(event, ctx),
  };
}
