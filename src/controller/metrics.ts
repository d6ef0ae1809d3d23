import { Gauge, type Registry } from 'prom-client';
import { HistogramFamily, ValueFamily } from './hotMetrics.js';

/**
 * The controller-runtime metric families, registered at most once per Registry (several queues and controllers
 * share one registry; prom-client refuses duplicate names). Callers pass their own Registry, never the global one.
 * Families on the per-key path are hot metrics (see hotMetrics.ts); children outlive a queue, so a controller that
 * is stopped and started again (leader election) keeps counting where it was.
 */

/** controller-runtime's workqueue latency buckets: 10 ns … 1000 s, ×10 each. */
export const WORKQUEUE_LATENCY_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));

/** controller-runtime's reconcile_time_seconds buckets. */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10,
  15, 20, 25, 30, 40, 50, 60,
];

/** What a live work queue reports when the registry is scraped. */
export interface InFlightReporter {
  readonly name: string;
  /** Keys added and not yet handed out (client-go's depth). */
  depth(): number;
  /** Sum of seconds all in-flight items have been processing, and the longest single one. */
  inFlightSeconds(): { total: number; longest: number };
}

export interface WorkQueueMetrics {
  adds: ValueFamily;
  retries: ValueFamily;
  queueDuration: HistogramFamily;
  workDuration: HistogramFamily;
  /** Live queues, read on scrape for depth and in-flight work. */
  reporters: Set<InFlightReporter>;
}

export interface ControllerMetrics {
  reconcileTotal: ValueFamily;
  reconcileErrors: ValueFamily;
  terminalErrors: ValueFamily;
  reconcileTime: HistogramFamily;
  activeWorkers: ValueFamily;
  maxConcurrent: ValueFamily;
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
    adds: new ValueFamily(registry, 'counter', 'workqueue_adds_total', 'Total number of adds handled by workqueue', ['name']),
    retries: new ValueFamily(registry, 'counter', 'workqueue_retries_total', 'Total number of retries handled by workqueue', ['name']),
    queueDuration: new HistogramFamily(
      registry,
      'workqueue_queue_duration_seconds',
      'How long in seconds an item stays in workqueue before being requested',
      ['name'],
      WORKQUEUE_LATENCY_BUCKETS,
    ),
    workDuration: new HistogramFamily(
      registry,
      'workqueue_work_duration_seconds',
      'How long in seconds processing an item from workqueue takes',
      ['name'],
      WORKQUEUE_LATENCY_BUCKETS,
    ),
  };
  const known = (): Set<string> => new Set([...m.adds.labelValues(), ...[...reporters].map((r) => r.name)]);
  new Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of workqueue',
    labelNames: ['name'],
    registers,
    collect() {
      this.reset();
      for (const name of known()) this.set({ name }, 0);
      for (const r of reporters) this.set({ name: r.name }, r.depth());
    },
  });
  new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration. ' + 'Large values indicate stuck threads.',
    labelNames: ['name'],
    registers,
    collect() {
      this.reset();
      for (const name of known()) this.set({ name }, 0);
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
      for (const name of known()) this.set({ name }, 0);
      for (const r of reporters) this.set({ name: r.name }, r.inFlightSeconds().longest);
    },
  });
  workQueueCache.set(registry, m);
  return m;
}

export function controllerMetrics(registry: Registry): ControllerMetrics {
  const cached = controllerCache.get(registry);
  if (cached) return cached;
  const m: ControllerMetrics = {
    reconcileTotal: new ValueFamily(registry, 'counter', 'controller_runtime_reconcile_total', 'Total number of reconciliations per controller', [
      'controller',
      'result',
    ]),
    reconcileErrors: new ValueFamily(registry, 'counter', 'controller_runtime_reconcile_errors_total', 'Total number of reconciliation errors per controller', [
      'controller',
    ]),
    terminalErrors: new ValueFamily(
      registry,
      'counter',
      'controller_runtime_terminal_reconcile_errors_total',
      'Total number of terminal reconciliation errors per controller',
      ['controller'],
    ),
    reconcileTime: new HistogramFamily(
      registry,
      'controller_runtime_reconcile_time_seconds',
      'Length of time per reconciliation per controller',
      ['controller'],
      RECONCILE_TIME_BUCKETS,
    ),
    activeWorkers: new ValueFamily(registry, 'gauge', 'controller_runtime_active_workers', 'Number of currently used workers per controller', ['controller']),
    maxConcurrent: new ValueFamily(
      registry,
      'gauge',
      'controller_runtime_max_concurrent_reconciles',
      'Maximum number of concurrent reconciles per controller',
      ['controller'],
    ),
  };
  controllerCache.set(registry, m);
  return m;
}
