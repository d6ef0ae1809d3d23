import type { KubeObject, StoreEvent } from '../types.js';
import { controllerRef, keyOf } from './kube.js';

/** The types the behaviour keeps in memory (by plural; all in the core or apps group). */
const INDEXED = new Set(['pods', 'nodes', 'replicasets', 'deployments', 'daemonsets', 'statefulsets', 'controllerrevisions']);

/**
 * An in-memory mirror of the objects the simulated cluster acts on, kept current from the store's synchronous event
 * stream, with the lookups controllers need at scale (pods by node and by owner). Because store events are delivered
 * synchronously, the index reflects a write as soon as the write returns.
 */
export class ClusterIndex {
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  /** owner uid → plural → key → object, for objects whose controller is that owner. */
  private readonly owned = new Map<string, Map<string, Map<string, KubeObject>>>();
  private readonly podsOnNode = new Map<string, Set<string>>();
  private readonly unscheduledPods = new Set<string>();

  constructor() {
    for (const plural of INDEXED) this.objects.set(plural, new Map());
  }

  static indexes(plural: string, group: string): boolean {
    return INDEXED.has(plural) && (group === '' || group === 'apps');
  }

  apply(event: StoreEvent): void {
    const { plural, group } = event.resource;
    if (!ClusterIndex.indexes(plural, group)) return;
    if (event.previous) this.remove(plural, event.previous);
    else if (event.type === 'DELETED') this.remove(plural, event.object);
    if (event.type !== 'DELETED') this.add(plural, event.object);
  }

  add(plural: string, obj: KubeObject): void {
    const key = keyOf(obj);
    this.objects.get(plural)!.set(key, obj);
    const owner = controllerRef(obj)?.uid;
    if (owner) {
      let byPlural = this.owned.get(owner);
      if (!byPlural) {
        byPlural = new Map();
        this.owned.set(owner, byPlural);
      }
      let objects = byPlural.get(plural);
      if (!objects) {
        objects = new Map();
        byPlural.set(plural, objects);
      }
      objects.set(key, obj);
    }
    if (plural === 'pods') {
      const node: string | undefined = obj.spec?.nodeName;
      if (node) addTo(this.podsOnNode, node, key);
      else this.unscheduledPods.add(key);
    }
  }

  private remove(plural: string, obj: KubeObject): void {
    const key = keyOf(obj);
    const current = this.objects.get(plural)!;
    if (current.get(key)?.metadata.uid === obj.metadata.uid) current.delete(key);
    const owner = controllerRef(obj)?.uid;
    const byPlural = owner ? this.owned.get(owner) : undefined;
    const objects = byPlural?.get(plural);
    if (objects?.get(key)?.metadata.uid === obj.metadata.uid) {
      objects!.delete(key);
      if (objects!.size === 0) byPlural!.delete(plural);
      if (byPlural!.size === 0) this.owned.delete(owner!);
    }
    if (plural === 'pods') {
      const node: string | undefined = obj.spec?.nodeName;
      if (node) removeFrom(this.podsOnNode, node, key);
      else this.unscheduledPods.delete(key);
    }
  }

  get(plural: string, key: string): KubeObject | undefined {
    return this.objects.get(plural)?.get(key);
  }

  all(plural: string): IterableIterator<KubeObject> {
    return this.objects.get(plural)!.values();
  }

  /** Objects of `plural` whose controlling owner has this uid. */
  ownedBy(uid: string | undefined, plural: string): KubeObject[] {
    const objects = uid ? this.owned.get(uid)?.get(plural) : undefined;
    return objects ? [...objects.values()] : [];
  }

  podsOn(node: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const key of this.podsOnNode.get(node) ?? []) {
      const pod = this.get('pods', key);
      if (pod) out.push(pod);
    }
    return out;
  }

  podCountOn(node: string): number {
    return this.podsOnNode.get(node)?.size ?? 0;
  }

  podKeysOn(node: string): string[] {
    return [...(this.podsOnNode.get(node) ?? [])];
  }

  unscheduled(): string[] {
    return [...this.unscheduledPods];
  }
}

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(value);
}

function removeFrom(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
