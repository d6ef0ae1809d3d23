import type { Manager } from '../../src/controller/Manager.js';
import { controllerMetrics } from '../../src/controller/metrics.js';
import { until } from './until.js';
import { parseFieldSelector, parseLabelSelector } from '../../src/sim/api/selectors.js';
import type { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import type { KubeObject } from '../../src/sim/types.js';

/**
 * Why the controllers of `manager` are not quiet yet, or undefined when they are: every informer has seen every
 * event of the simulator's `store` that its watch would deliver (its type, namespace and selectors), and no controller
 * has a key queued, in progress or delayed. The signal a "nothing happened" assertion waits on, instead of on time:
 * whatever the controllers were going to do about the current state of the cluster, they have done.
 */
export function notQuiet(manager: Manager, store: MemoryStore, polling: readonly string[] = []): string | undefined {
  for (const informer of manager.informerVersions()) {
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
  for (const s of manager.snapshots()) {
    if (s.depth > 0 || s.inFlight.length > 0 || (s.delayed > 0 && !polling.includes(s.name))) {
      return `controller ${s.name}: ${s.depth} queued, ${s.inFlight.length} in progress, ${s.delayed} delayed`;
    }
  }
  return undefined;
}

/** Reconciles `controller` has finished so far, whatever their result (its reconcile_total metric). */
function reconciles(manager: Manager, controller: string): number {
  const total = controllerMetrics(manager.registry).reconcileTotal;
  return ['success', 'error', 'requeue', 'requeue_after'].reduce((sum, result) => sum + total.child(controller, result).value, 0);
}

/**
 * Waits until the controllers of `manager` are quiet (notQuiet); a failure says what kept them busy.
 *
 * `polling` names controllers that legitimately hold a delayed key while they wait on the cluster (a rollout that
 * re-checks its nodes): their delayed keys do not count, but once everything else is quiet each of them holding one must finish
 * one more reconcile, which therefore saw the current state, and then everything must be quiet again.
 */
export async function waitQuiet(manager: Manager, store: MemoryStore, polling: readonly string[] = [], timeoutMs = 15_000): Promise<void> {
  let why: string | undefined;
  const quiet = () =>
    until(
      () => `the controllers quiet (${why})`,
      () => {
        why = notQuiet(manager, store, polling);
        return why === undefined;
      },
      { timeoutMs, intervalMs: 10 },
    );
  await quiet();
  const waiting = manager
    .snapshots()
    .filter((s) => polling.includes(s.name) && s.delayed > 0)
    .map((s) => s.name);
  if (waiting.length === 0) return;
  const before = waiting.map((c) => reconciles(manager, c));
  await until(`one more reconcile of ${waiting.join(', ')}`, () => waiting.every((c, i) => reconciles(manager, c) > before[i]!), { timeoutMs, intervalMs: 10 });
  await quiet();
}
