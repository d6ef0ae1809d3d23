import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * One Prometheus registry per app instance (never prom-client's global one), so that several servers in one test
 * process do not share counters. Components register their own metrics on `registry`.
 */
export interface AppMetrics {
  registry: Registry;
  graphqlOperations: Counter<'operation' | 'type' | 'result'>;
  graphqlDuration: Histogram<'type'>;
  subscriptionsActive: Gauge;
  eventsAppended: Counter<'type'>;
  rolloutsFinished: Counter<'kind' | 'state'>;
  rolloutsActive: Gauge<'kind'>;
}

export function createMetrics(): AppMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
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
      name: 'rollplane_graphql_operations_total',
      help: 'GraphQL operations executed, by operation name, type and result (ok or error code).',
      labelNames: ['operation', 'type', 'result'],
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
    eventsAppended: new Counter({
      name: 'rollplane_events_appended_total',
      help: 'History events committed to the store, by type.',
      labelNames: ['type'],
      registers: [registry],
    }),
  };
}
