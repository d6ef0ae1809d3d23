import { eventDefinition, readPayload, readRoutingFields } from '../eventPayloads.js';
import { EventType, type RolloutKind } from '../events.js';
import { type NotifiableState, type NotificationFilter, ONCE_PER_FIELDS, type OncePerField, type Route } from './model.js';

/**
 * An event as routing sees it: the same before it is stored (no id yet) and after. Its payload is read through its
 * type's schema (readPayload, readRoutingFields), never by key: a stored payload of any age routes.
 */
export interface RoutableEvent {
  type: EventType;
  rolloutId?: string | null;
  kind?: RolloutKind | null;
  namespace?: string | null;
  name?: string | null;
  payload?: unknown;
}

/** A delivery row to write with the event at `eventIndex` of the transaction's events. */
export interface OutboxEntry {
  eventIndex: number;
  subscriptionId: string;
  onceKey: string | null;
  lane: string | null;
}

/** The member cluster of events that name none (issue 29 adds `payload.cluster`; until then there is one cluster). */
export const LOCAL_CLUSTER = 'local';

/** The state an event says something moved to, if it says one. */
export function stateOf(event: RoutableEvent): NotifiableState | undefined {
  switch (event.type) {
    case EventType.RolloutStateChanged:
    case EventType.TargetStateChanged:
      return readPayload(event.type, event.payload).to;
    case EventType.TargetFailed:
      return 'FAILED';
    default:
      return undefined;
  }
}

/**
 * The CloudEvents `type` of an event: `io.rollplane.<subject>.<what>.v1`, e.g. `io.rollplane.rollout.failed.v1` for a
 * rollout that moved to FAILED, `io.rollplane.target.succeeded.v1`, `io.rollplane.agent.recreated.v1`. A receiver
 * routes on it without parsing the payload; `v1` changes only with the payload's shape.
 */
export function notificationTypeOf(event: Pick<RoutableEvent, 'type' | 'payload'>): string {
  // Its definition's name (a kind's event types are defined in the kind's events.ts, ADR 0051).
  const base = eventDefinition(event.type)?.notification ?? String(event.type).toLowerCase();
  if (event.type === EventType.RolloutStateChanged || event.type === EventType.TargetStateChanged) {
    const state = stateOf(event as RoutableEvent);
    return `io.rollplane.${base}.${(state ?? 'changed').toLowerCase()}.v1`;
  }
  return `io.rollplane.${base}.v1`;
}

export function clusterOf(event: RoutableEvent): string {
  return readRoutingFields(event.type, event.payload).cluster ?? LOCAL_CLUSTER;
}

/** The value of a stable field on an event, or undefined when the event has none. */
function stableValue(event: RoutableEvent, field: OncePerField): string | undefined {
  switch (field) {
    case 'ROLLOUT':
      return event.rolloutId ?? undefined;
    case 'WAVE':
      return readRoutingFields(event.type, event.payload).wave;
    case 'GATE':
      return readRoutingFields(event.type, event.payload).gate;
    case 'CLUSTER':
      return clusterOf(event);
    case 'TARGET':
      return event.name ? `${event.kind ?? ''}/${event.namespace ?? ''}/${event.name}` : undefined;
    default: {
      const never: never = field;
      throw new TypeError(`unknown once-per field ${String(never)}`);
    }
  }
}

export function matchesNotificationFilter(event: RoutableEvent, filter: NotificationFilter): boolean {
  if (filter.types.length > 0 && !filter.types.includes(event.type)) return false;
  if (filter.kinds.length > 0 && (!event.kind || !filter.kinds.includes(event.kind))) return false;
  if (filter.clusters.length > 0 && !filter.clusters.includes(clusterOf(event))) return false;
  if (filter.states.length > 0) {
    const state = stateOf(event);
    if (!state || !filter.states.includes(state)) return false;
  }
  if (filter.rolloutIds.length > 0 && (!event.rolloutId || !filter.rolloutIds.includes(event.rolloutId))) return false;
  return true;
}

/**
 * The "once per" key: the notification type and the chosen stable fields, or null when the subscription sends every
 * event or the event does not carry every chosen field (an AgentRecreated outside any rollout is not "once per
 * rollout": it is sent). Only identifiers go in, never text with times or durations, so a flapping wave or a target
 * that fails twice gives the same key and the outbox's unique (subscription, key) keeps the first.
 */
export function onceKeyOf(event: RoutableEvent, oncePer: readonly OncePerField[]): string | null {
  if (oncePer.length === 0) return null;
  const parts = [notificationTypeOf(event)];
  // In the fixed order of ONCE_PER_FIELDS: the key must not depend on how the fields were listed.
  for (const field of ONCE_PER_FIELDS) {
    if (!oncePer.includes(field)) continue;
    const value = stableValue(event, field);
    if (value === undefined) return null;
    parts.push(`${field.toLowerCase()}=${value}`);
  }
  return parts.join('|');
}

/**
 * Slack threads: the messages of one rollout go to one thread, so they are sent one at a time in event order (the
 * first one's answer names the thread the others reply in). Webhooks need no order.
 */
export function laneOf(event: RoutableEvent, route: Route): string | null {
  return route.sinkKind === 'SLACK' && event.rolloutId ? `${route.subscriptionId}|${event.rolloutId}` : null;
}

/**
 * The delivery rows a transaction's events make: one per (event, matching subscription), minus repeats of a once-per
 * key within the batch (the store's unique index drops repeats across transactions). Pure: the stores call it inside
 * the transaction that appends the events (HistoryStore.transactionWithEvents).
 */
export function routeEvents(events: readonly RoutableEvent[], routes: readonly Route[]): OutboxEntry[] {
  if (routes.length === 0) return [];
  const out: OutboxEntry[] = [];
  const seenKeys = new Set<string>();
  events.forEach((event, eventIndex) => {
    for (const route of routes) {
      if (!matchesNotificationFilter(event, route.filter)) continue;
      const onceKey = onceKeyOf(event, route.oncePer);
      if (onceKey !== null) {
        const seen = `${route.subscriptionId}\u0000${onceKey}`;
        if (seenKeys.has(seen)) continue;
        seenKeys.add(seen);
      }
      out.push({ eventIndex, subscriptionId: route.subscriptionId, onceKey, lane: laneOf(event, route) });
    }
  });
  return out;
}
