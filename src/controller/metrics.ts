import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The controller-runtime metric families, registered at most once per Registry (several queues and controllers
 * share one registry; prom-client refuses duplicate names). Callers pass their own Registry, never the global one.
 */

/** controller-runtime's workqueue latency buckets: 10 ns … 1000 s, ×10 each. */
export const WORKQUEUE_LATENCY_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

/** What a work queue reports about its in-flight work when the registry is scraped. */
export interface InFlightReporter {
  readonly name: string;
  /** Sum of seconds all in-flight items have been processing, and the longest single one. */
  inFlightSeconds(): { total: number; longest: number };
}

export interface WorkQueueMetrics {
  depth: Gauge<'name'>;
  adds: Counter<'name'>;
  queueDuration: Histogram<'name'>;
  workDuration: Histogram<'name'>;
  retries: Counter<'name'>;
  /** Queues whose in-flight work the two gauges below report on scrape. */
  reporters: Set<InFlightReporter>;
}

export interface ControllerMetrics {
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  terminalErrors: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  activeWorkers: Gauge<'controller'>;
  maxConcurrent: Gauge<'controller'>;
}

const workQueueCache = new WeakMap<Registry, WorkQueueMetrics>();
const controllerCache = new WeakMap<Registry, ControllerMetrics>();

export function workQueueMetrics(registry: Registry): WorkQueueMetrics {
  const cached = workQueueCache.get(registry);
  if (cached) return cached;
  const reporters = new Set<InFlightReporter>();
  const registers = [registry];
  const m: WorkQueueMetrics = {
    reporters,
    depth: new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers }),
    adds: new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers }),
    queueDuration: new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: WORKQUEUE_LATENCY_BUCKETS,
      registers,
    }),
    workDuration: new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: WORKQUEUE_LATENCY_BUCKETS,
      registers,
    }),
    retries: new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers }),
  };
  new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help:
      'How many seconds of work has been done that is in progress and has not been observed by work_duration. ' +
      'Large values indicate stuck threads.',
    labelNames: ['name'],
    registers,
    collect() {
      this.reset();
      for (const r of reporters) this.set({ name: r.name }, r.inFlightSeconds().total);
    },
  });
  new Gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running',
    labelNames: ['name'],
    registers,
    collect() {
      this.reset();
      for (const r of reporters) this.set({ name: r.name }, r.inFlightSeconds().longest);
    },
  });
  workQueueCache.set(registry, m);
  return m;
}

export function controllerMetrics(registry: Registry): ControllerMetrics {
  const cached = controllerCache.get(registry);
  if (cached) return cached;
  const registers = [registry];
  const m: ControllerMetrics = {
    reconcileTotal: new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    terminalErrors: new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    reconcileTime: new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60],
      registers,
    }),
    activeWorkers: new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    }),
    maxConcurrent: new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    }),
  };
  controllerCache.set(registry, m);
  return m;
}
