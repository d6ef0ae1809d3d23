import type { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import { scrape, type Sample } from './promText.js';
import { type RuntimeState, waitQuietOn } from './quiet.js';

/**
 * The runtime state of a service in another process, from its /metrics: rollplane_informer_resource_version (each
 * informer's collection and resourceVersion), workqueue_depth, controller_runtime_active_workers (reconciles in
 * progress; workqueue_unfinished_work_seconds cannot say "in progress" reliably, it reads 0 within the first
 * millisecond), rollplane_workqueue_delayed and controller_runtime_reconcile_total.
 */
export function stateFromMetrics(samples: readonly Sample[]): RuntimeState {
  const of = (name: string) => samples.filter((s) => s.name === name);
  const informers = of('rollplane_informer_resource_version').map((s) => ({
    name: s.labels.informer!,
    path: s.labels.resource!,
    ...(s.labels.label_selector ? { labelSelector: s.labels.label_selector } : {}),
    ...(s.labels.field_selector ? { fieldSelector: s.labels.field_selector } : {}),
    resourceVersion: Number.isNaN(s.value) ? undefined : String(s.value),
  }));
  const sum = (name: string, label: string, value: string) =>
    of(name)
      .filter((s) => s.labels[label] === value)
      .reduce((total, s) => total + s.value, 0);
  const names = new Set([...of('workqueue_depth'), ...of('rollplane_workqueue_delayed')].map((s) => s.labels.name!));
  const queues = [...names].map((name) => ({
    name,
    depth: sum('workqueue_depth', 'name', name),
    inFlight: sum('controller_runtime_active_workers', 'controller', name),
    delayed: sum('rollplane_workqueue_delayed', 'name', name),
  }));
  return { informers, queues, reconciles: (controller) => sum('controller_runtime_reconcile_total', 'controller', controller) };
}

/**
 * Waits until the service at `url` (any URL of it; its /metrics is read) is quiet against the simulator's `store`: its
 * informers caught up, its work queues empty, nothing in progress or delayed (see waitQuietOn for `polling`). A
 * service that exposes no informer is never quiet: the wait would prove nothing.
 */
export function waitServiceQuiet(url: string, store: MemoryStore, polling: readonly string[] = [], timeoutMs = 15_000): Promise<void> {
  const metrics = new URL('/metrics', url);
  return waitQuietOn(
    async () => {
      const state = stateFromMetrics(await scrape(metrics));
      if (state.informers.length === 0) state.informers.push({ name: '(none: /metrics lists no informer)', path: '/', resourceVersion: undefined });
      return state;
    },
    store,
    polling,
    timeoutMs,
  );
}
