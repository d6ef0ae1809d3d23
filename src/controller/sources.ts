import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller, Source } from './Controller.js';
import type { CacheReader } from './IndexedCache.js';
import { keyOf, type Request } from './request.js';

/**
 * Filters informer events before they reach a controller's queue (controller-runtime's predicate.Funcs). A missing
 * function admits the event.
 */
export interface Predicate<T> {
  create?(obj: T): boolean;
  update?(oldObj: T, newObj: T): boolean;
  delete?(obj: T): boolean;
}

/** Turns an object into the requests to reconcile (controller-runtime's handler.MapFunc). */
export type MapFunc<T> = (obj: T) => Request[];

/** The object itself. */
export function enqueueSelf<T extends KubernetesObject>(): MapFunc<T> {
  return (obj) => (obj.metadata?.name ? [{ namespace: obj.metadata.namespace, name: obj.metadata.name }] : []);
}

/**
 * The owner of kind `kind` (and `apiVersion`'s group, when given) from ownerReferences; only the controller
 * reference when `onlyController` (controller-runtime's EnqueueRequestForOwner with OnlyControllerOwner). Owners are
 * assumed to live in the object's namespace, as Kubernetes requires.
 */
export function enqueueOwner<T extends KubernetesObject>(kind: string, options: { apiVersion?: string; onlyController?: boolean } = {}): MapFunc<T> {
  const group = options.apiVersion ? groupOf(options.apiVersion) : undefined;
  return (obj) =>
    (obj.metadata?.ownerReferences ?? [])
      .filter((r) => r.kind === kind && (group === undefined || groupOf(r.apiVersion) === group) && (!options.onlyController || r.controller === true))
      .map((r) => ({ namespace: obj.metadata?.namespace, name: r.name }));
}

/** The object named by two labels (e.g. an agent Pod labelled with its IPPool's namespace and name). */
export function enqueueByLabels<T extends KubernetesObject>(namespaceLabel: string, nameLabel: string): MapFunc<T> {
  return (obj) => {
    const labels = obj.metadata?.labels ?? {};
    const name = labels[nameLabel];
    if (!name) return [];
    return [{ namespace: labels[namespaceLabel] || undefined, name }];
  };
}

/** Only spec changes (metadata.generation), like controller-runtime's GenerationChangedPredicate. */
export function generationChanged<T extends KubernetesObject>(): Predicate<T> {
  return { update: (o, n) => o.metadata?.generation !== n.metadata?.generation };
}

/** Only changes of the given labels or annotations. */
export function metadataChanged<T extends KubernetesObject>(labels: string[], annotations: string[] = []): Predicate<T> {
  return {
    update: (o, n) =>
      labels.some((l) => o.metadata?.labels?.[l] !== n.metadata?.labels?.[l]) ||
      annotations.some((a) => o.metadata?.annotations?.[a] !== n.metadata?.annotations?.[a]),
  };
}

export interface FeedOptions<T> {
  map?: MapFunc<T>;
  predicates?: Predicate<T>[];
}

/**
 * Connects an informer to a controller: every admitted event enqueues the mapped requests (an update enqueues the
 * mapping of both old and new object, so a changed owner reference or label reaches both), and every controller start
 * resyncs the whole cache through the mapping.
 */
export function feed<T extends KubernetesObject>(informer: CacheReader<T>, controller: Controller, options: FeedOptions<T> = {}): void {
  const map = options.map ?? enqueueSelf<T>();
  const predicates = options.predicates ?? [];
  const enqueue = (obj: T): void => {
    for (const r of map(obj)) controller.enqueue(keyOf(r));
  };
  informer.addEventHandler({
    onAdd: (obj) => {
      if (predicates.every((p) => p.create?.(obj) ?? true)) enqueue(obj);
    },
    onUpdate: (oldObj, newObj) => {
      if (!predicates.every((p) => p.update?.(oldObj, newObj) ?? true)) return;
      enqueue(oldObj);
      enqueue(newObj);
    },
    onDelete: (obj) => {
      if (predicates.every((p) => p.delete?.(obj) ?? true)) enqueue(obj);
    },
  });
  const source: Source = {
    resync: (add) => {
      for (const obj of informer.list()) for (const r of map(obj)) add(keyOf(r));
    },
  };
  controller.watch(source);
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
