import { eventDefinition, readPayload, readRoutingFields } from '../eventPayloads.js';
import { clusterOfEvent, EventType, type RolloutKind } from '../events.js';
import { matchesLabelSelector, parseLabelSelector, type Requirement } from '../labelSelector.js';
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
  /** The member cluster of the object it is about (ADR 0054); null for a rollout's own events. */
  cluster?: string | null;
  payload?: unknown;
}

/**
 * What routing by cluster needs beyond the event (ADR 0060), read by the store inside the transaction that appends the
 * events, and only when a subscription selects clusters: the clusters a rollout's targets are in (a rollout's own
 * events name no cluster: it may span several), and the labels of the clusters involved (for label selectors).
 */
export interface ClusterFacts {
  clustersOfRollout: ReadonlyMap<string, readonly string[]>;
  labelsOf: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

export const NO_CLUSTER_FACTS: ClusterFacts = { clustersOfRollout: new Map(), labelsOf: new Map() };

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

/** The cluster an event names: its column, else a payload's `cluster` (ADR 0046's routing fields); null for none. */
function namedClusterOf(event: RoutableEvent): string | null {
  return clusterOfEvent(event) ?? readRoutingFields(event.type, event.payload).cluster ?? null;
}

/** The cluster "once per CLUSTER" keys on: the one the event names, `local` for an event that names none. */
export function clusterOf(event: RoutableEvent): string {
  return namedClusterOf(event) ?? LOCAL_CLUSTER;
}

/**
 * The clusters an event is in, for a subscription's cluster selection: the one it names, else (a rollout's own event)
 * every cluster its rollout has targets in; `local` when neither is known (as every event was before clusters).
 */
export function clustersOfEvent(event: RoutableEvent, facts: ClusterFacts): readonly string[] {
  const named = namedClusterOf(event);
  if (named !== null) return [named];
  const ofRollout = event.rolloutId ? facts.clustersOfRollout.get(event.rolloutId) : undefined;
  return ofRollout && ofRollout.length > 0 ? ofRollout : [LOCAL_CLUSTER];
}

/** Whether a filter selects clusters at all (names or a label selector): only then does routing need ClusterFacts. */
export function selectsClusters(filter: NotificationFilter): boolean {
  return filter.clusters.length > 0 || filter.clusterSelector !== '';
}

/**
 * Parsed label selectors, by their text: routes are matched for every event, a selector parsed once. A selector that
 * does not parse (never stored: filterFrom refuses it) selects nothing rather than failing the events' transaction.
 */
const parsedSelectors = new Map<string, readonly Requirement[] | null>();
function requirementsOf(selector: string): readonly Requirement[] | null {
  let parsed = parsedSelectors.get(selector);
  if (parsed === undefined) {
    try {
      parsed = parseLabelSelector(selector, 'filter.clusterSelector');
    } catch {
      parsed = null;
    }
    if (parsedSelectors.size > 1000) parsedSelectors.clear();
    parsedSelectors.set(selector, parsed);
  }
  return parsed;
}

function labelsMatch(selector: string, labels: Readonly<Record<string, string>> | undefined): boolean {
  const requirements = selector === '' ? null : requirementsOf(selector);
  return requirements !== null && matchesLabelSelector(requirements, { ...labels });
}

/** The cluster selection of a filter: names and the label selector, the union of both (as a bump's selection). */
function clusterSelected(event: RoutableEvent, filter: NotificationFilter, facts: ClusterFacts): boolean {
  if (!selectsClusters(filter)) return true;
  return clustersOfEvent(event, facts).some((cluster) => filter.clusters.includes(cluster) || labelsMatch(filter.clusterSelector, facts.labelsOf.get(cluster)));
}

/**
 * What ClusterFacts a store must read for these events and routes: the rollouts whose clusters it needs (a rollout's
 * own events, when a route selects clusters), and whether labels are needed (a route has a label selector). Undefined:
 * no route selects clusters, read nothing.
 */
export function clusterFactsWanted(events: readonly RoutableEvent[], routes: readonly Route[]): { rolloutIds: string[]; labels: boolean } | undefined {
  if (!routes.some((r) => selectsClusters(r.filter))) return undefined;
  const rolloutIds = new Set<string>();
  for (const event of events) if (event.rolloutId && namedClusterOf(event) === null) rolloutIds.add(event.rolloutId);
  return { rolloutIds: [...rolloutIds], labels: routes.some((r) => r.filter.clusterSelector !== '') };
}

/** The clusters whose labels a store must read: those the events name, and those of the rollouts read for them. */
export function clustersToLabel(events: readonly RoutableEvent[], clustersOfRollout: ReadonlyMap<string, readonly string[]>): string[] {
  const clusters = new Set<string>();
  for (const event of events) {
    const named = namedClusterOf(event);
    if (named !== null) clusters.add(named);
  }
  for (const list of clustersOfRollout.values()) for (const cluster of list) clusters.add(cluster);
  if (events.some((e) => namedClusterOf(e) === null)) clusters.add(LOCAL_CLUSTER);
  return [...clusters];
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

export function matchesNotificationFilter(event: RoutableEvent, filter: NotificationFilter, facts: ClusterFacts = NO_CLUSTER_FACTS): boolean {
  if (filter.types.length > 0 && !filter.types.includes(event.type)) return false;
  if (filter.kinds.length > 0 && (!event.kind || !filter.kinds.includes(event.kind))) return false;
  if (!clusterSelected(event, filter, facts)) return false;
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
export function routeEvents(events: readonly RoutableEvent[], routes: readonly Route[], facts: ClusterFacts = NO_CLUSTER_FACTS): OutboxEntry[] {
  if (routes.length === 0) return [];
  const out: OutboxEntry[] = [];
  const seenKeys = new Set<string>();
  events.forEach((event, eventIndex) => {
    if (isBaseline(event)) return;
    for (const route of routes) {
      if (!matchesNotificationFilter(event, route.filter, facts)) continue;
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

/**
 * Not a change, so nobody is told: the image rollplane first saw an upstream controller deploy, recorded as the baseline
 * of its changes (`firstSeen`). Sent as it was, it read as a helm upgrade made outside rollplane (attack 18, L1).
 */
function isBaseline(event: Pick<RoutableEvent, 'type' | 'payload'>): boolean {
  return event.type === EventType.UpstreamControllerChanged && (event.payload as { firstSeen?: unknown } | null)?.firstSeen === true;
}
