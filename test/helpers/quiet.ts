import type { Manager } from '../../src/controller/Manager.js';
import { parseFieldSelector, parseLabelSelector } from '../../src/sim/api/selectors.js';
import type { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import type { KubeObject } from '../../src/sim/types.js';

/**
 * Why the controllers of `manager` are not quiet yet, or undefined when they are: every informer has seen every
 * event of the simulator's `store` that its watch would deliver (its type, namespace and selectors), and no controller
 * has a key queued, in progress or delayed. The signal a "nothing happened" assertion waits on, instead of on time:
 * whatever the controllers were going to do about the current state of the cluster, they have done.
 */
export function notQuiet(manager: Manager, store: MemoryStore): string | undefined {
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
    if (s.depth > 0 || s.inFlight.length > 0 || s.delayed > 0) {
      return `controller ${s.name}: ${s.depth} queued, ${s.inFlight.length} in progress, ${s.delayed} delayed`;
    }
  }
  return undefined;
}
