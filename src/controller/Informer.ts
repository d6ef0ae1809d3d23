import type { KubernetesListObject, KubernetesObject, Watch } from '@kubernetes/client-node';
import { ResourceExpiredError, translateKubeError } from '../kube/errors.js';
import { type Clock, sleep, systemClock, type TimerHandle } from './clock.js';
import { keyOf } from './request.js';

export interface InformerEventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** `obj` is the last state seen; after a relist it may be older than the object's final state. */
  onDelete?(obj: T): void;
}

/** Extra cache indexes: index name → function giving the index values of an object. */
export type Indexers<T> = Record<string, (obj: T) => string[]>;

export interface InformerOptions<T extends KubernetesObject> {
  /** For errors and logs, e.g. 'pods'. */
  name: string;
  /** Watch path, e.g. `/api/v1/pods` or `/apis/network.harvesterhci.io/v1alpha1/namespaces/ns/ippools`. */
  path: string;
  /** The list call for the same collection (a typed client-node call); must return the list's resourceVersion. */
  list: () => Promise<KubernetesListObject<T>>;
  watch: Watch;
  labelSelector?: string;
  fieldSelector?: string;
  indexers?: Indexers<T>;
  clock?: Clock;
  /** First retry delay after a failure; doubles up to maxBackoffMs; default 200 ms. */
  initialBackoffMs?: number;
  /** Default 30 s. */
  maxBackoffMs?: number;
  /** Server-side watch timeout; the client re-watches after it. Default 300 s. */
  watchTimeoutSeconds?: number;
  onError?(error: unknown): void;
  /** Uniform [0, 1) for backoff jitter; injectable so tests get exact delays. */
  random?: () => number;
}

type WatchEnd = { kind: 'closed'; events: number } | { kind: 'expired'; error: unknown } | { kind: 'error'; error: unknown };

/**
 * List + watch of one collection into a local cache (client-go's reflector + indexer), built on client-node's Watch
 * but restarting on its own: client-node's informer stops for good after a non-410 error, this one never does.
 * - Any failure (list or watch, any status, network) → wait with exponential backoff, then relist.
 * - 410 Gone / an ERROR event with code 410 (resourceVersion too old) → relist at once.
 * - A watch the server simply ends → re-watch from the last resourceVersion (bookmarks keep it fresh).
 * A relist is diffed against the cache, so handlers see exactly the changes missed while disconnected: onAdd for new
 * objects, onUpdate for changed resourceVersions, onDelete for objects gone. Handlers run synchronously, in order.
 * Cached objects are in wire form (plain JSON as the API server sends it, timestamps as strings, apiVersion/kind
 * set), whether they came from the list or the watch. Treat them as read-only: they are shared with every reader.
 */
export class Informer<T extends KubernetesObject> {
  readonly name: string;
  private readonly options: InformerOptions<T>;
  private readonly clock: Clock;
  private readonly cache = new Map<string, T>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: InformerEventHandler<T>[] = [];
  private resourceVersion: string | undefined;
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private stopController: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private currentWatch: AbortController | undefined;
  /** Events delivered by the current (or last) watch. */
  private watchEvents = 0;
  /** Counters for tests and diagnostics. */
  readonly stats = { lists: 0, watches: 0, errors: 0, expired: 0 };

  constructor(options: InformerOptions<T>) {
    this.options = options;
    this.name = options.name;
    this.clock = options.clock ?? systemClock;
    for (const index of ['namespace', ...Object.keys(options.indexers ?? {})]) this.indexes.set(index, new Map());
  }

  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
  }

  start(): void {
    if (this.loop) return;
    const stop = new AbortController();
    this.stopController = stop;
    this.loop = this.run(stop.signal);
  }

  async stop(): Promise<void> {
    this.stopController?.abort(new Error(`informer ${this.name} stopping`));
    this.currentWatch?.abort();
    await this.loop;
    this.loop = undefined;
    this.stopController = undefined;
  }

  /** True once the first list has filled the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(keyOf({ namespace, name }));
  }

  /** All cached objects, or those of one namespace. */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.cache.values()];
    return this.byIndex('namespace', namespace);
  }

  /** Cached objects whose indexer (or the built-in `namespace` index) yields `value`. */
  byIndex(index: string, value: string): T[] {
    const keys = this.indexes.get(index)?.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.cache.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  /** The resourceVersion the informer is current with. */
  lastSyncResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  private async run(stop: AbortSignal): Promise<void> {
    const initial = this.options.initialBackoffMs ?? 200;
    const max = this.options.maxBackoffMs ?? 30_000;
    const random = this.options.random ?? Math.random;
    let backoff = initial;
    while (!stop.aborted) {
      let end: WatchEnd;
      try {
        if (this.resourceVersion === undefined) await this.relist();
        end = await this.watchOnce(stop);
      } catch (error) {
        end = { kind: 'error', error };
      }
      if (stop.aborted) return;
      // A watch that delivered events was healthy, however it ended: failures after it start a fresh backoff.
      if (this.watchEvents > 0) backoff = initial;
      this.watchEvents = 0;
      switch (end.kind) {
        case 'closed':
          if (end.events > 0) continue;
          // Closed with nothing delivered: re-watch, but not in a tight loop if the server keeps doing it.
          await sleep(this.clock, backoff / 2 + random() * (backoff / 2), stop).catch(() => {});
          backoff = Math.min(max, backoff * 2);
          continue;
        case 'expired':
          this.stats.expired++;
          this.resourceVersion = undefined;
          continue;
        case 'error': {
          this.stats.errors++;
          this.options.onError?.(translateKubeError(end.error, `informer ${this.name}`));
          this.resourceVersion = undefined;
          // Full jitter keeps many informers from retrying in lockstep after an API server restart.
          await sleep(this.clock, backoff / 2 + random() * (backoff / 2), stop).catch(() => {});
          backoff = Math.min(max, backoff * 2);
          continue;
        }
        default: {
          const never: never = end;
          throw new TypeError(`unexpected watch end ${JSON.stringify(never)}`);
        }
      }
    }
  }

  private async relist(): Promise<void> {
    this.stats.lists++;
    const list = await this.options.list();
    const seen = new Set<string>();
    const kind = list.kind?.endsWith('List') ? list.kind.slice(0, -'List'.length) : undefined;
    for (const item of list.items) {
      const obj = toWireForm(item, list.apiVersion, kind);
      const key = objectKey(obj);
      seen.add(key);
      this.upsert(key, obj);
    }
    for (const [key, old] of [...this.cache]) {
      if (!seen.has(key)) this.remove(key, old);
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      const ws = this.syncWaiters;
      this.syncWaiters = [];
      for (const w of ws) w();
    }
  }

  private watchOnce(stop: AbortSignal): Promise<WatchEnd> {
    // An abort listener added to an already-aborted signal never fires: stop() during the relist lands here.
    this.watchEvents = 0;
    if (stop.aborted) return Promise.resolve({ kind: 'closed', events: 0 });
    this.stats.watches++;
    return new Promise<WatchEnd>((resolve) => {
      let settled = false;
      const finish = (end: WatchEnd): void => {
        if (settled) return;
        settled = true;
        if (watchdog) this.clock.clearTimeout(watchdog);
        stop.removeEventListener('abort', onStop);
        this.currentWatch?.abort();
        this.currentWatch = undefined;
        resolve(end);
      };
      let events = 0;
      const onStop = (): void => finish({ kind: 'closed', events });
      stop.addEventListener('abort', onStop, { once: true });
      const timeoutSeconds = this.options.watchTimeoutSeconds ?? 300;
      // client-node's Watch sets no timeout of its own: a connection that dies without a FIN would hang forever.
      // The server ends the watch after timeoutSeconds; if nothing at all arrived by then plus a margin, re-watch.
      let watchdog: TimerHandle | undefined;
      const feedWatchdog = (): void => {
        if (watchdog) this.clock.clearTimeout(watchdog);
        watchdog = this.clock.setTimeout(() => finish({ kind: 'closed', events }), (timeoutSeconds + 30) * 1000);
      };
      feedWatchdog();
      const query: Record<string, string | number | boolean | undefined> = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
      };
      this.options.watch
        .watch(
          this.options.path,
          query,
          (type: string, obj: unknown) => {
            if (settled) return;
            events++;
            this.watchEvents = events;
            feedWatchdog();
            try {
              this.onWatchEvent(type, obj);
            } catch (error) {
              finish(error instanceof ResourceExpiredError ? { kind: 'expired', error } : { kind: 'error', error });
            }
          },
          (err: unknown) => {
            if (err === null || err === undefined) finish({ kind: 'closed', events });
            else if ((err as { statusCode?: number }).statusCode === 410) finish({ kind: 'expired', error: err });
            else finish({ kind: 'error', error: err });
          },
        )
        .then(
          (controller) => {
            if (settled) controller.abort();
            else this.currentWatch = controller;
          },
          (error: unknown) => finish({ kind: 'error', error }),
        );
    });
  }

  private onWatchEvent(type: string, raw: unknown): void {
    const obj = raw as T;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
        this.upsert(objectKey(obj), obj);
        break;
      case 'DELETED': {
        const key = objectKey(obj);
        const old = this.cache.get(key);
        if (old) this.remove(key, obj);
        break;
      }
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const status = raw as { code?: number; message?: string };
        const e = translateKubeError({ kind: 'Status', ...status }, `watch ${this.name}`);
        throw e;
      }
      default:
        return;
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    if (old) this.unindex(key, old);
    this.cache.set(key, obj);
    this.index(key, obj);
    for (const h of this.handlers) {
      this.safely(() => (old ? h.onUpdate?.(old, obj) : h.onAdd?.(obj)));
    }
  }

  private remove(key: string, last: T): void {
    const old = this.cache.get(key);
    if (!old) return;
    this.unindex(key, old);
    this.cache.delete(key);
    for (const h of this.handlers) this.safely(() => h.onDelete?.(last));
  }

  /** A failing handler must not break the watch (which would relist) nor keep other handlers from the event. */
  private safely(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private index(key: string, obj: T): void {
    for (const [name, values] of this.indexValues(obj)) {
      const idx = this.indexes.get(name)!;
      for (const v of values) {
        let set = idx.get(v);
        if (!set) idx.set(v, (set = new Set()));
        set.add(key);
      }
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, values] of this.indexValues(obj)) {
      const idx = this.indexes.get(name)!;
      for (const v of values) {
        const set = idx.get(v);
        set?.delete(key);
        if (set?.size === 0) idx.delete(v);
      }
    }
  }

  private indexValues(obj: T): Array<[string, string[]]> {
    const out: Array<[string, string[]]> = [['namespace', [obj.metadata?.namespace ?? '']]];
    for (const [name, fn] of Object.entries(this.options.indexers ?? {})) out.push([name, fn(obj)]);
    return out;
  }
}

/**
 * Typed client-node lists deserialize items into model instances (timestamps as Date, no apiVersion/kind) while watch
 * events are plain JSON (timestamps as strings). The cache holds one form only, the wire form, whichever path an
 * object came by; a no-op for objects that already are plain JSON.
 */
function toWireForm<T extends KubernetesObject>(item: T, apiVersion: string | undefined, kind: string | undefined): T {
  const plain = Object.getPrototypeOf(item) === Object.prototype && !hasDate(item.metadata) ? item : (JSON.parse(JSON.stringify(item)) as T);
  if (!plain.apiVersion && apiVersion) plain.apiVersion = apiVersion;
  if (!plain.kind && kind) plain.kind = kind;
  return plain;
}

function hasDate(metadata: KubernetesObject['metadata']): boolean {
  return metadata?.creationTimestamp instanceof Date || metadata?.deletionTimestamp instanceof Date;
}

export function objectKey(obj: KubernetesObject): string {
  return keyOf({ namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? '' });
}
