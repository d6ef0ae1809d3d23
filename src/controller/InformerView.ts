import type { KubernetesObject } from '@kubernetes/client-node';
import { IndexedCache, objectKey, type CacheReader, type Indexers, type InformerEventHandler } from './IndexedCache.js';

export interface ViewOptions<T> {
  /** For logs and readiness, e.g. 'agent-pods'. */
  name: string;
  /** Which of the informer's objects belong to the view. Must depend on the object only. */
  filter: (obj: T) => boolean;
  indexers?: Indexers<T>;
}

/**
 * The objects of an informer that pass a filter, with indexes and event handlers of their own (what a label or
 * namespace selector would give a separate informer, without a second list and watch of the collection or a second
 * copy of its objects). An object that starts passing arrives as an add, one that stops passing as a delete.
 * Holds the informer's objects themselves: read-only, as the informer's are.
 */
export class InformerView<T extends KubernetesObject> implements CacheReader<T> {
  readonly name: string;
  private readonly cache: IndexedCache<T>;
  private readonly handlers: InformerEventHandler<T>[] = [];

  constructor(
    private readonly source: CacheReader<T>,
    private readonly options: ViewOptions<T>,
  ) {
    this.name = options.name;
    this.cache = new IndexedCache<T>(options.indexers);
    for (const obj of source.list()) if (options.filter(obj)) this.cache.put(objectKey(obj), obj);
    source.addEventHandler({
      onAdd: (obj) => this.onChange(undefined, obj),
      onUpdate: (oldObj, newObj) => this.onChange(oldObj, newObj),
      onDelete: (obj) => this.onChange(obj, undefined),
    });
  }

  private onChange(oldObj: T | undefined, newObj: T | undefined): void {
    const key = objectKey((newObj ?? oldObj)!);
    const had = this.cache.getByKey(key);
    if (newObj && this.options.filter(newObj)) {
      this.cache.put(key, newObj);
      this.notify((h) => (had ? h.onUpdate?.(had, newObj) : h.onAdd?.(newObj)));
    } else if (had) {
      this.cache.delete(key);
      this.notify((h) => h.onDelete?.(had));
    }
  }

  /** Every handler hears the event even if one throws; the first error goes on to the informer (which logs it). */
  private notify(call: (handler: InformerEventHandler<T>) => void): void {
    let failure: unknown;
    for (const h of this.handlers) {
      try {
        call(h);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  }

  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
  }

  hasSynced(): boolean {
    return this.source.hasSynced();
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(namespace, name);
  }

  list(namespace?: string): T[] {
    return this.cache.list(namespace);
  }

  byIndex(index: string, value: string): T[] {
    return this.cache.byIndex(index, value);
  }
}
