import { type AnalysisMetrics, createAnalysisMetrics } from './analysis/metrics.js';
import { readPayload } from './domain/eventPayloads.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventBus } from './domain/EventBus.js';
import { EventType, ROLLOUT_KINDS } from './domain/events.js';
import { ACTIVE_ROLLOUT_STATES, isTerminal } from './domain/rolloutStates.js';
import { ClusterRegistries } from './metricsByCluster.js';
import type { HistoryReads } from './store/port.js';
import { REVISION, VERSION } from './version.js';

/**
 * One Prometheus registry per app instance (never prom-client's global one), so that several servers in one test
 * process do not share counters. Components register their own metrics on `registry`.
 */
export interface AppMetrics {
  registry: Registry;
  /** The member runtimes' registries, rendered into /metrics with a `cluster` label (metricsByCluster.ts). */
  members: ClusterRegistries;
  graphqlOperations: Counter<'field' | 'type' | 'result' | 'transport'>;
  requestsRefused: Counter<'reason' | 'transport'>;
  graphqlExecutions: Counter<'executor'>;
  responseCacheBytes: Gauge;
  documentStoreBytes: Gauge;
  databaseDiskFreeBytes: Gauge;
  graphqlDuration: Histogram<'type'>;
  subscriptionsActive: Gauge;
  subscriptionExecutions: Counter;
  subscriptionCatchUps: Counter;
  subscriptionGroups: Gauge;
  subscriptionDeliveryLag: Histogram;
  subscriptionHandoffLag: Histogram;
  subscriptionsShared: Gauge;
  eventsAppended: Counter<'type'>;
  rolloutsFinished: Counter<'kind' | 'state'>;
  rolloutsActive: Gauge<'kind'>;
  notificationDeliveries: Counter<'sink' | 'outcome'>;
  notificationLatency: Histogram<'sink'>;
  notificationQueueDepth: Gauge;
  notificationQueueAge: Gauge;
  /** Analysis gates' measured values, thresholds and decisions (src/analysis/metrics.ts, ADR 0061). */
  analysis: AnalysisMetrics;
}

export function createMetrics(): AppMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // The conventional *_build_info gauge: always 1, its labels say what runs (the same values as `rollplane --version`
  // and the image's OCI labels).
  new Gauge({
    name: 'rollplane_build_info',
    help: 'Always 1; labelled with the version and source revision of this rollplane and the Node.js version it runs on.',
    labelNames: ['version', 'revision', 'nodejs'],
    registers: [registry],
  }).set({ version: VERSION, revision: REVISION, nodejs: process.versions.node }, 1);
  return {
    registry,
    members: new ClusterRegistries(),
    analysis: createAnalysisMetrics(registry),
    rolloutsFinished: new Counter({
      name: 'rollplane_rollouts_finished_total',
      help: 'Rollouts that reached a final state, by kind and state (SUCCEEDED, FAILED, ABORTED, ROLLED_BACK).',
      labelNames: ['kind', 'state'],
      registers: [registry],
    }),
    rolloutsActive: new Gauge({
      name: 'rollplane_rollouts_active',
      help: 'Rollouts that are PENDING, PROGRESSING or PAUSED, by kind.',
      labelNames: ['kind'],
      registers: [registry],
    }),
    graphqlOperations: new Counter({
      // Labelled by the schema's root field names, a closed set: never by the client-chosen operation name.
      name: 'rollplane_graphql_operations_total',
      help: 'GraphQL operations, once per root field they ran: field, type, result (ok or error code) and transport (http, ws).',
      labelNames: ['field', 'type', 'result', 'transport'],
      registers: [registry],
    }),
    requestsRefused: new Counter({
      name: 'rollplane_requests_refused_total',
      help: 'Requests refused before GraphQL ran or without an audit entry: unauthenticated, rate_limited, origin, host, connections, subscriptions, held_bytes (open WebSocket operations over their memory budget).',
      labelNames: ['reason', 'transport'],
      registers: [registry],
    }),
    graphqlExecutions: new Counter({
      name: 'rollplane_graphql_executions_total',
      help: 'GraphQL queries and mutations over HTTP by the executor that answered: interpreted (graphql-js), cached (the response cache had the answer; nothing ran).',
      labelNames: ['executor'],
      registers: [registry],
    }),
    responseCacheBytes: new Gauge({
      name: 'rollplane_response_cache_bytes',
      help: 'Heap the answers kept by the response cache take, estimated (ROLLPLANE_RESPONSE_CACHE_MB bounds it).',
      registers: [registry],
    }),
    documentStoreBytes: new Gauge({
      name: 'rollplane_graphql_document_store_bytes',
      help: 'Heap the parsed GraphQL documents kept between requests take, estimated from their source text and tokens (bounded at 16 MiB).',
      registers: [registry],
    }),
    databaseDiskFreeBytes: new Gauge({
      name: 'rollplane_database_disk_free_bytes',
      help: 'Free bytes on the volume of the SQLite history file (0 on PostgreSQL, not measured there); /readyz warns below 10% or 256 MiB.',
      registers: [registry],
    }),
    graphqlDuration: new Histogram({
      name: 'rollplane_graphql_operation_duration_seconds',
      help: 'Time to execute a GraphQL query or mutation.',
      labelNames: ['type'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    subscriptionsActive: new Gauge({
      name: 'rollplane_subscriptions_active',
      help: 'Open GraphQL subscriptions.',
      registers: [registry],
    }),
    subscriptionExecutions: new Counter({
      // The fan-out executes once per event and distinct (document, variables, role), not once per delivery.
      name: 'rollplane_subscription_executions_total',
      help: 'Subscription payloads executed by the fan-out (once per event and distinct document, variables and role).',
      registers: [registry],
    }),
    subscriptionCatchUps: new Counter({
      name: 'rollplane_subscription_catch_ups_total',
      help: 'Times a subscription whose socket fell behind stopped taking live events and caught up from the store.',
      registers: [registry],
    }),
    subscriptionGroups: new Gauge({
      name: 'rollplane_subscription_groups',
      help: 'Distinct (document, variables, role) the shared fan-out executes each event for.',
      registers: [registry],
    }),
    subscriptionDeliveryLag: new Histogram({
      // The server's share of commit → client latency; the rest is the network and the client.
      name: 'rollplane_subscription_delivery_lag_seconds',
      help: "Shared fan-out: from an event's commit until its message was handed to the subscribers' sockets, once per event and group.",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    subscriptionHandoffLag: new Histogram({
      // Per delivery rather than per event: within a burst the last socket written waits for all the others. Sampled
      // (one live subscriber in SUBSCRIPTION_HANDOFF_SAMPLE of each group, for every event it was handed), so that
      // the measurement costs nothing worth counting per delivery; fine buckets, as the aim is tens of milliseconds.
      name: 'rollplane_subscription_handoff_lag_seconds',
      help: "Shared fan-out, sampled deliveries: from an event's commit until its message was written to that subscriber's socket.",
      buckets: [0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    subscriptionsShared: new Gauge({
      name: 'rollplane_subscriptions_shared',
      help: 'Subscriptions served by the shared fan-out (registered, positioned and receiving).',
      registers: [registry],
    }),
    eventsAppended: new Counter({
      name: 'rollplane_events_appended_total',
      help: 'History events committed to the store, by type.',
      labelNames: ['type'],
      registers: [registry],
    }),
    // Counted by the leader, which sends (docs/adr/0035); `sink` is the sink kind, never a URL or a subscription name.
    notificationDeliveries: new Counter({
      name: 'rollplane_notification_deliveries_total',
      help: 'Notification attempts by sink kind (webhook, slack) and outcome: delivered, retried (failed, tried again later), dead_lettered (given up).',
      labelNames: ['sink', 'outcome'],
      registers: [registry],
    }),
    notificationLatency: new Histogram({
      name: 'rollplane_notification_delivery_latency_seconds',
      help: "From an event's commit until a sink answered 2xx to its notification, by sink kind (retries included).",
      labelNames: ['sink'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers: [registry],
    }),
    notificationQueueDepth: new Gauge({
      name: 'rollplane_notification_queue_depth',
      help: 'Notification deliveries waiting to be sent or retried (PENDING), read from the store at scrape time.',
      registers: [registry],
    }),
    notificationQueueAge: new Gauge({
      name: 'rollplane_notification_queue_age_seconds',
      help: 'Age of the oldest PENDING notification delivery (0 when none), read from the store at scrape time: alert when it grows.',
      registers: [registry],
    }),
  };
}

/** One live subscriber in this many, per group and delivery, is timed for rollplane_subscription_handoff_lag_seconds. */
export const SUBSCRIPTION_HANDOFF_SAMPLE = 16;

export type Transport = 'http' | 'ws';

/** Counts one finished operation under each root field it ran ("(none)" when it never got that far). */
export function countOperation(metrics: AppMetrics, type: string, fields: readonly string[], result: string, transport: Transport): void {
  for (const field of fields.length > 0 ? fields : ['(none)']) metrics.graphqlOperations.inc({ field, type, result, transport });
  if (result === 'RATE_LIMITED') metrics.requestsRefused.inc({ reason: 'rate_limited', transport });
}

/** Counts committed history events, and rollouts reaching a final state, as the bus publishes them. Returns the unsubscribe function. */
export function countHistoryEvents(metrics: AppMetrics, bus: EventBus): () => void {
  return bus.subscribe((event) => {
    metrics.eventsAppended.inc({ type: event.type });
    if (event.type !== EventType.RolloutStateChanged || !event.kind) return;
    const { to } = readPayload(EventType.RolloutStateChanged, event.payload);
    if (to && isTerminal(to)) metrics.rolloutsFinished.inc({ kind: event.kind, state: to });
  });
}

/**
 * Sets `rollplane_rollouts_active` from the store. Called at scrape time rather than kept from events, so the gauge is
 * right after a restart and counts rollouts started through other replicas too.
 */
export async function countActiveRollouts(metrics: AppMetrics, reads: Pick<HistoryReads, 'countRollouts'>): Promise<void> {
  const counts = await Promise.all(ROLLOUT_KINDS.map((kind) => reads.countRollouts({ kind, states: ACTIVE_ROLLOUT_STATES })));
  for (const [i, kind] of ROLLOUT_KINDS.entries()) metrics.rolloutsActive.set({ kind }, counts[i] ?? 0);
}
