import { principalName } from '../../auth/roles.js';
import { type DeliveryState, DELIVERY_STATES } from '../../domain/notifications/model.js';
import { NO_DELIVERIES } from '../../domain/notifications/NotificationStore.js';
import { deliveryId, type NotificationService } from '../../domain/notifications/NotificationService.js';
import { ValidationError } from '../../errors.js';
import { parseEventId } from '../../util/pagination.js';
import type { GraphQLContext } from '../context.js';
import type { NotificationDeliveryFilter, Resolvers } from '../generated/resolvers.js';
import { BatchLoader, perContext } from './batchLoader.js';
import { connectionOfItems } from './connection.js';
import { eventToGraphQL } from './mappers.js';

const ID_RE = /^[\x21-\x7e]{1,200}$/;

function requireId(id: string, field = 'id'): string {
  if (!ID_RE.test(id)) throw new ValidationError(field, 'must be 1 to 200 printable ASCII characters without spaces');
  return id;
}

function deliveryFilterFrom(filter: NotificationDeliveryFilter | null | undefined) {
  if (!filter) return {};
  return {
    ...(filter.subscriptionId != null ? { subscriptionId: requireId(filter.subscriptionId, 'filter.subscriptionId') } : {}),
    ...(filter.states ? { states: [...new Set(filter.states)].filter((s): s is DeliveryState => DELIVERY_STATES.includes(s)) } : {}),
    ...(filter.eventId != null ? { eventId: parseEventId(filter.eventId, 'filter.eventId')! } : {}),
    ...(filter.rolloutId != null ? { rolloutId: requireId(filter.rolloutId, 'filter.rolloutId') } : {}),
  };
}

/** A page's delivery counts in one query. */
const countsLoader = perContext(
  (ctx: GraphQLContext) =>
    new BatchLoader(
      (ids: readonly string[]) => ctx.domain.notifications.counts(ids),
      () => NO_DELIVERIES,
    ),
);

/** The subscriptions of a page of deliveries, each read once per request. */
const subscriptionLoader = perContext((ctx: GraphQLContext) => {
  const seen = new Map<string, ReturnType<NotificationService['get']>>();
  return (id: string) => {
    let found = seen.get(id);
    if (!found) {
      found = ctx.domain.notifications.get(id);
      seen.set(id, found);
    }
    return found;
  };
});

/** The admin API of notifications (docs/notifications.md); every root field here is admin only (auth/policy.ts). */
export const notificationsResolvers: Resolvers = {
  Query: {
    notificationSubscriptions: async (_, args, ctx) => {
      const page = await ctx.domain.notifications.list(args.first, args.after);
      return connectionOfItems(page, (node) => ({ cursor: node.id, node }));
    },
    notificationSubscription: async (_, args, ctx) => (await ctx.domain.notifications.get(requireId(args.id))) ?? null,
    notificationDeliveries: async (_, args, ctx) => {
      const page = await ctx.domain.notifications.deliveries(deliveryFilterFrom(args.filter), args.first, args.after);
      return connectionOfItems(page, (node) => ({ cursor: String(node.id), node }));
    },
  },

  Mutation: {
    createNotificationSubscription: (_, args, ctx) => ctx.domain.notifications.create(args.input, principalName(ctx.principal)),
    updateNotificationSubscription: (_, args, ctx) => ctx.domain.notifications.update(requireId(args.id), args.input),
    deleteNotificationSubscription: (_, args, ctx) => ctx.domain.notifications.delete(requireId(args.id)),
    replayNotificationDelivery: (_, args, ctx) => ctx.domain.notifications.replay(deliveryId(args.id, 'id')),
    replayNotificationDeliveries: async (_, args, ctx) => ({
      replayed: await ctx.domain.notifications.replayRange({
        subscriptionId: requireId(args.input.subscriptionId, 'input.subscriptionId'),
        fromEventId: parseEventId(args.input.fromEventId, 'input.fromEventId')!,
        toEventId: parseEventId(args.input.toEventId, 'input.toEventId')!,
        states: args.input.states ?? null,
      }),
    }),
  },

  NotificationSubscription: {
    deliveries: (subscription, _, ctx) => countsLoader(ctx).load(subscription.id),
  },

  NotificationDelivery: {
    id: (delivery) => String(delivery.id),
    subscription: async (delivery, _, ctx) => {
      const subscription = await subscriptionLoader(ctx)(delivery.subscriptionId);
      // Subscriptions are never removed (deletion marks them): a delivery always has one.
      if (!subscription) throw new Error(`delivery ${delivery.id} names subscription ${delivery.subscriptionId}, which is not stored`);
      return subscription;
    },
    event: (delivery) => eventToGraphQL(delivery.event),
  },
};
