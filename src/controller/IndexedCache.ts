import type { KubernetesObject } from '@kubernetes/client-node';
import { keyOf } from './request.js';

/** Extra cache indexes: index name → function giving the index values of an object. */
export type Indexers<T> = Record<string, (obj: T) => string[]>;

export interface InformerEventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** `obj` is the last state seen; after a relist it may be older than the object's final state. */
  onDelete?(obj: T): void;
}

/** What controllers read of an informer (or of a view over one): its cache, its indexes and its events. */
export interface CacheReader<T> {
  readonly name: string;
  get(namespace: string | undefined, name: string): T | undefined;
  /** All cached objects, or those of one namespace. */
  list(namespace?: string): T[];
  /** Cached objects whose indexer (or the built-in `namespace` index) yields `value`. */
  byIndex(index: string, value: string): T[];
  addEventHandler(handler: InformerEventHandler<T>): void;
  hasSynced(): boolean;
}

/** `namespace/name` (or `name`) of an object: the cache key. */
export function objectKey(obj: KubernetesObject): string {
  return keyOf({ namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? '' });
}

/** Objects by key plus secondary indexes (client-go's thread-safe store with indexers, minus the threads). */
export class IndexedCache<T extends KubernetesObject> {
  private readonly byKey = new Map<string, T>();
  private readonly indexers: Indexers<T> = {};
  private readonly indexes = new Map<string, Map<string, Set<string>>>([['namespace', new Map()]]);

  constructor(indexers: Indexers<T> = {}) {
    this.addIndexers(indexers);
  }

  /** Adds indexes, indexing what is cached already. An index of an existing name is kept as it is. */
  addIndexers(indexers: Indexers<T>): void {
    for (const [name, fn] of Object.entries(indexers)) {
      if (this.indexes.has(name)) continue;
      this.indexers[name] = fn;
      const index = new Map<string, Set<string>>();
      this.indexes.set(name, index);
      for (const [key, obj] of this.byKey) for (const v of fn(obj)) add(index, v, key);
    }
  }

  get size(): number {
    return this.byKey.size;
  }

  getByKey(key: string): T | undefined {
    return this.byKey.get(key);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.byKey.get(keyOf({ namespace, name }));
  }

  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.byKey.values()];
    return this.byIndex('namespace', namespace);
  }

  byIndex(index: string, value: string): T[] {
    const keys = this.indexes.get(index)?.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.byKey.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  entries(): IterableIterator<[string, T]> {
    return this.byKey.entries();
  }

  /** Stores `obj` under `key`; returns what it replaced. */
  put(key: string, obj: T): T | undefined {
    const old = this.byKey.get(key);
    if (old) this.unindex(key, old);
    this.byKey.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Removes the object under `key`; returns it. */
  delete(key: string): T | undefined {
    const old = this.byKey.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.byKey.delete(key);
    return old;
  }

  private index(key: string, obj: T): void {
    add(this.indexes.get('namespace')!, obj.metadata?.namespace ?? '', key);
    for (const [name, fn] of Object.entries(this.indexers)) {
      const index = this.indexes.get(name)!;
      for (const v of fn(obj)) add(index, v, key);
    }
  }

  private unindex(key: string, obj: T): void {
    remove(this.indexes.get('namespace')!, obj.metadata?.namespace ?? '', key);
    for (const [name, fn] of Object.entries(this.indexers)) {
      const index = this.indexes.get(name)!;
      for (const v of fn(obj)) remove(index, v, key);
    }
  }
}

function add(index: Map<string, Set<string>>, value: string, key: string): void {
  let set = index.get(value);
  if (!set) {
    set = new Set();
    index.set(value, set);
  }
  set.add(key);
}

function remove(index: Map<string, Set<string>>, value: string, key: string): void {
  const set = index.get(value);
  set?.delete(key);
  if (set?.size === 0) index.delete(value);
}
