import type { KubernetesListObject, KubernetesObject, Watch } from '@kubernetes/client-node';
import { ResourceExpiredError, translateKubeError } from '../kube/errors.js';
import { type Clock, sleep, systemClock, type TimerHandle } from '../util/clock.js';
import { malformedObject } from './decodeObject.js';
import { IndexedCache, objectKey, type CacheReader, type Indexers, type InformerEventHandler } from './IndexedCache.js';
import { InformerView, type ViewOptions } from './InformerView.js';

export type { CacheReader, Indexers, InformerEventHandler } from './IndexedCache.js';

/**
 * Changes made to any informer's cache in this process. Views built from the caches (agent pools, drift) are answered
 * again from the response cache only while this count is unchanged (docs/adr/0026-response-cache.md). Counted for
 * every informer, not per view: a change the view does not read only costs a kept answer, and no informer a view
 * reads can be left out.
 */
let cacheChanges = 0;

export function informerCacheChanges(): number {
  return cacheChanges;
}

export interface InformerOptions<T extends KubernetesObject> {
  /** For errors and logs, e.g. 'pods'. */
  name: string;
  /** Watch path, e.g. `/api/v1/pods` or `/apis/network.harvesterhci.io/v1alpha1/namespaces/ns/ippools`. */
  path: string;
  /**
   * The list call for the same collection (a typed client-node call); must return the list's resourceVersion. It gets
   * a page to ask for (`limit`, and `continue` after the first page) and should pass both on: a relist then reads the
   * collection 500 objects at a time, as client-go's reflector does, instead of holding a 10,000-object response in
   * memory at once. A list that ignores them (returns everything, no `metadata.continue`) works too.
   */
  list: (page: ListPage) => Promise<KubernetesListObject<T>>;
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
  /**
   * A list failed before the informer's first sync (its cache cannot be read yet): the failure as thrown and how many
   * lists in a row failed so far. The informer retries with backoff whatever this does; a member cluster's runtime
   * uses it to say which kind cannot be read and why (docs/adr/0066-member-kind-caches.md).
   */
  onSyncFailure?(error: unknown, failuresInARow: number): void;
  /**
   * An object of a list or watch was skipped because it is not a Kubernetes object (no metadata, a name that is not a
   * string or not a valid name, not an object at all): why, and where it came from. Counted in `stats.skipped`.
   */
  onMalformed?(reason: string, from: 'list' | 'watch'): void;
  /** Uniform [0, 1) for backoff jitter; injectable so tests get exact delays. */
  random?: () => number;
  /**
   * Keep `metadata.managedFields` in the cache (default false). Server-side apply's bookkeeping is often the larger
   * part of an object and no reconciler reads it; dropping it is what controller-runtime's cache transform does too.
   */
  keepManagedFields?: boolean;
}

/** One page of a paginated list (`_continue` is client-node's name for the `continue` parameter). */
export interface ListPage {
  limit: number;
  _continue?: string;
}

/** Objects per list page (client-go's reflector uses 500 too). */
export const LIST_PAGE_SIZE = 500;

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
 * set), whether they came from the list or the watch, without managedFields unless asked. Treat them as read-only:
 * they are shared with every reader.
 */
export class Informer<T extends KubernetesObject> implements CacheReader<T> {
  readonly name: string;
  private readonly options: InformerOptions<T>;
  private readonly clock: Clock;
  private readonly cache: IndexedCache<T>;
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
  readonly stats = { lists: 0, watches: 0, errors: 0, expired: 0, skipped: 0 };
  /** Lists in a row that failed before the first sync. */
  private syncFailures = 0;

  constructor(options: InformerOptions<T>) {
    this.options = options;
    this.name = options.name;
    this.clock = options.clock ?? systemClock;
    this.cache = new IndexedCache<T>(options.indexers);
  }

  /** Adds indexes (an informer shared by several controllers gets each one's); what is cached is indexed at once. */
  addIndexers(indexers: Indexers<T>): void {
    this.cache.addIndexers(indexers);
  }

  /**
   * A cache of the objects that pass `filter`, kept current by this informer's events: a controller that needs a
   * subset (one namespace, one label) of a collection another controller caches whole shares the one list and watch.
   */
  view(options: ViewOptions<T>): InformerView<T> {
    return new InformerView(this, options);
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
    return this.cache.get(namespace, name);
  }

  list(namespace?: string): T[] {
    return this.cache.list(namespace);
  }

  byIndex(index: string, value: string): T[] {
    return this.cache.byIndex(index, value);
  }

  /** The collection watched: name, path and selectors. */
  selection(): { name: string; path: string; labelSelector?: string; fieldSelector?: string } {
    const { path, labelSelector, fieldSelector } = this.options;
    return { name: this.name, path, ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) };
  }

  /** One list request of a single object: whether the collection can be listed now (a retry before relisting it all). */
  async listOnePage(): Promise<void> {
    await this.options.list({ limit: 1 });
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
          if (!this.synced) this.options.onSyncFailure?.(end.error, ++this.syncFailures);
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
    const seen = new Set<string>();
    let resourceVersion = '';
    // Pages share the first page's resourceVersion (the API server serves them from one snapshot), so the cache ends
    // up exactly as of that version; an expired continue token (410) fails the relist, which then starts over.
    for (let continueToken: string | undefined, first = true; first || continueToken; first = false) {
      const list = await this.options.list({ limit: LIST_PAGE_SIZE, ...(continueToken ? { _continue: continueToken } : {}) });
      if (first) resourceVersion = list.metadata?.resourceVersion ?? '';
      const kind = list.kind?.endsWith('List') ? list.kind.slice(0, -'List'.length) : undefined;
      for (const item of list.items ?? []) {
        // One object a kube-apiserver would never send must not keep the whole collection unread: it is skipped and
        // said, as client-go's decoder drops what it cannot decode, and the good objects are cached.
        const malformed = malformedObject(item);
        if (malformed) {
          this.skip(malformed, 'list');
          continue;
        }
        const obj = toWireForm(item, list.apiVersion, kind);
        const key = objectKey(obj);
        seen.add(key);
        this.upsert(key, obj);
      }
      // Typed lists call it `_continue`; custom-object lists are plain JSON, where it is `continue`.
      const meta = list.metadata as { _continue?: string; continue?: string } | undefined;
      continueToken = meta?._continue || meta?.continue || undefined;
    }
    for (const [key, old] of [...this.cache.entries()]) {
      if (!seen.has(key)) this.remove(key, old);
    }
    this.resourceVersion = resourceVersion;
    this.syncFailures = 0;
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
    if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
      const malformed = malformedObject(raw);
      if (malformed) {
        this.skip(malformed, 'watch');
        return;
      }
    }
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
        this.upsert(objectKey(obj), obj);
        break;
      case 'DELETED': {
        const key = objectKey(obj);
        if (this.cache.getByKey(key)) this.remove(key, obj);
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
    // The object is this informer's own (parsed from this watch or list): trimming it changes nobody else's.
    if (!this.options.keepManagedFields && obj.metadata?.managedFields) delete obj.metadata.managedFields;
    const old = this.cache.getByKey(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.cache.put(key, obj);
    // Before the handlers: they run synchronously, so no request sees their derived state without this change counted.
    cacheChanges += 1;
    for (const h of this.handlers) {
      this.safely(() => (old ? h.onUpdate?.(old, obj) : h.onAdd?.(obj)));
    }
  }

  private remove(key: string, last: T): void {
    if (!this.cache.delete(key)) return;
    cacheChanges += 1;
    for (const h of this.handlers) this.safely(() => h.onDelete?.(last));
  }

  private skip(reason: string, from: 'list' | 'watch'): void {
    this.stats.skipped++;
    this.options.onMalformed?.(reason, from);
  }

  /** A failing handler must not break the watch (which would relist) nor keep other handlers from the event. */
  private safely(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.options.onError?.(error);
    }
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

export { objectKey } from './IndexedCache.js';
