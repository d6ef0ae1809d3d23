import type { Manager } from '../../src/controller/Manager.js';
import { controllerMetrics } from '../../src/controller/metrics.js';
import { until } from './until.js';
import { parseFieldSelector, parseLabelSelector } from '../../src/sim/api/selectors.js';
import type { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import type { KubeObject } from '../../src/sim/types.js';

/**
 * What "quiet" is judged on, read either from a Manager in this process or from a service's /metrics: each informer's
 * collection and the resourceVersion it is current with, and each work queue's keys queued, in progress and delayed.
 */
export interface RuntimeState {
  informers: { name: string; path: string; labelSelector?: string; fieldSelector?: string; resourceVersion: string | undefined }[];
  queues: { name: string; depth: number; inFlight: number; delayed: number }[];
  /** Reconciles `controller` has finished so far, whatever their result (its controller_runtime_reconcile_total). */
  reconciles(controller: string): number;
}

const RESULTS = ['success', 'error', 'requeue', 'requeue_after'];

/** The runtime state of a Manager in this process. */
export function managerState(manager: Manager): RuntimeState {
  const total = controllerMetrics(manager.registry).reconcileTotal;
  return {
    informers: manager.informerVersions(),
    queues: manager.snapshots().map((s) => ({ name: s.name, depth: s.depth, inFlight: s.inFlight.length, delayed: s.delayed })),
    reconciles: (controller) => RESULTS.reduce((sum, result) => sum + total.child(controller, result).value, 0),
  };
}

/**
 * Why `state` is not quiet yet, or undefined when it is: every informer has seen every event of the simulator's `store`
 * that its watch would deliver (its type, namespace and selectors), and no controller has a key queued, in progress or
 * delayed. The signal a "nothing happened" assertion waits on, instead of on time: whatever the controllers were going
 * to do about the current state of the cluster, they have done.
 */
export function whyBusy(state: RuntimeState, store: MemoryStore, polling: readonly string[] = []): string | undefined {
  for (const informer of state.informers) {
    if (informer.resourceVersion === undefined) return `informer ${informer.name} not synced`;
    const segments = informer.path.split('/').filter(Boolean);
    const group = segments[0] === 'api' ? '' : segments[1]!;
    const rest = segments.slice(segments[0] === 'api' ? 2 : 3);
    const namespace = rest[0] === 'namespaces' && rest.length > 2 ? rest[1] : undefined;
    const type = store.resourceType(group, rest[rest.length - 1]!);
    if (!type) return `informer ${informer.name}: no simulator type for ${informer.path}`;
    const label = parseLabelSelector(informer.labelSelector);
    const field = parseFieldSelector(informer.fieldSelector);
    const matches = (o: KubeObject | undefined) =>
      o !== undefined && (namespace === undefined || o.metadata.namespace === namespace) && label.matches(o) && field.matches(o);
    const missed = store.eventsSince(Number(informer.resourceVersion), type).filter((e) => matches(e.object) || matches(e.previous));
    if (missed.length > 0) return `informer ${informer.name} at ${informer.resourceVersion}, ${missed.length} event(s) behind`;
  }
  for (const q of state.queues) {
    if (q.depth > 0 || q.inFlight > 0 || (q.delayed > 0 && !polling.includes(q.name))) {
      return `controller ${q.name}: ${q.depth} queued, ${q.inFlight} in progress, ${q.delayed} delayed`;
    }
  }
  return undefined;
}

/** Why the controllers of `manager` (in this process) are not quiet yet, or undefined when they are (see whyBusy). */
export function notQuiet(manager: Manager, store: MemoryStore, polling: readonly string[] = []): string | undefined {
  return whyBusy(managerState(manager), store, polling);
}

/**
 * Waits until the runtime that `read` describes is quiet (whyBusy); a failure says what kept it busy.
 *
 * `polling` names controllers that legitimately hold a delayed key while they wait on the cluster (a rollout that
 * re-checks its nodes): their delayed keys do not count, but once everything else is quiet each of them holding one must finish
 * one more reconcile, which therefore saw the current state, and then everything must be quiet again.
 */
export async function waitQuietOn(
  read: () => RuntimeState | Promise<RuntimeState>,
  store: MemoryStore,
  polling: readonly string[] = [],
  timeoutMs = 15_000,
): Promise<void> {
  let why: string | undefined;
  const quiet = () =>
    until(
      () => `the controllers quiet (${why})`,
      async () => {
        const state = await read();
        why = whyBusy(state, store, polling);
        return why === undefined ? state : undefined;
      },
      { timeoutMs, intervalMs: 10 },
    );
  const state = await quiet();
  const waiting = state.queues.filter((q) => polling.includes(q.name) && q.delayed > 0).map((q) => q.name);
  if (waiting.length === 0) return;
  const before = waiting.map((c) => state.reconciles(c));
  await until(
    `one more reconcile of ${waiting.join(', ')}`,
    async () => {
      const now = await read();
      return waiting.every((c, i) => now.reconciles(c) > before[i]!);
    },
    { timeoutMs, intervalMs: 10 },
  );
  await quiet();
}

/** Waits until the controllers of `manager`, in this process, are quiet (see waitQuietOn). */
export function waitQuiet(manager: Manager, store: MemoryStore, polling: readonly string[] = [], timeoutMs = 15_000): Promise<void> {
  return waitQuietOn(() => managerState(manager), store, polling, timeoutMs);
}
