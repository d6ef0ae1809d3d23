import type { ServerResponse } from 'node:http';
import type { KubeObject, ResourceType, StoreEvent, WatchableStore } from '../types.js';
import { apiVersionOf, typeKey } from '../store/resources.js';
import { forgetJson, objectJson } from './json.js';
import type { Selector } from './selectors.js';
import { TABLE_CONTENT_TYPE, toTable } from './table.js';

export interface WatchRequest {
  type: ResourceType;
  /** Undefined: all namespaces (or a cluster-scoped type). */
  namespace: string | undefined;
  label: Selector;
  field: Selector;
  bookmarks: boolean;
  timeoutSeconds: number | undefined;
  /** Deliver each object as a one-row meta.k8s.io Table (kubectl get -w); column definitions ride on the first event. */
  table: boolean;
}

interface Watcher extends WatchRequest {
  res: ServerResponse;
  /** Lines queued since the last flush; written in one chunk per event-loop turn. */
  buffer: string;
  timer: NodeJS.Timeout | undefined;
  closed: boolean;
  sentColumns: boolean;
  /** A watch asked to start after a revision not reached yet: events up to it are not sent (0: none held back). */
  holdThrough: number;
}

export interface WatchHubOptions {
  bookmarkIntervalMs: number;
  /** A watcher whose socket has more than this many bytes unsent is cut off (a slow client must not grow memory). */
  maxBufferedBytes?: number;
}

/**
 * Fans store events out to watch connections. Each event is serialized at most once per event type it is delivered
 * as, then appended to every matching watcher's buffer; buffers go to the sockets once per event-loop turn.
 * Selector semantics follow Kubernetes: an object that stops matching is delivered as DELETED, one that starts
 * matching as ADDED.
 */
export class WatchHub {
  private readonly byType = new Map<string, Set<Watcher>>();
  private readonly dirty = new Set<Watcher>();
  private flushScheduled = false;
  private readonly unsubscribe: () => void;
  private readonly bookmarkTimer: NodeJS.Timeout;
  private readonly maxBufferedBytes: number;

  constructor(
    private readonly store: WatchableStore,
    options: WatchHubOptions,
  ) {
    this.maxBufferedBytes = options.maxBufferedBytes ?? 64 * 1024 * 1024;
    this.unsubscribe = store.subscribe((event) => this.onEvent(event));
    this.bookmarkTimer = setInterval(() => this.sendBookmarks(), options.bookmarkIntervalMs);
    this.bookmarkTimer.unref();
  }

  count(): number {
    let n = 0;
    for (const set of this.byType.values()) n += set.size;
    return n;
  }

  /**
   * Starts a watch on `res` (headers not yet sent). `fromRevision` undefined means "current state first": synthetic
   * ADDED events for every matching object, then live events. Otherwise events after that revision are replayed; an
   * expired revision gets an ERROR event carrying a 410 Expired Status, as the real API server sends it.
   * Must run synchronously from replay to registration so no event falls between them.
   */
  start(res: ServerResponse, request: WatchRequest, fromRevision: number | undefined): void {
    const watcher: Watcher = { ...request, res, buffer: '', timer: undefined, closed: false, sentColumns: false, holdThrough: 0 };
    if (fromRevision !== undefined && fromRevision > this.store.currentRevision()) watcher.holdThrough = fromRevision;
    res.writeHead(200, { 'Content-Type': request.table ? TABLE_CONTENT_TYPE : 'application/json', 'Cache-Control': 'no-cache, private' });
    if (fromRevision === undefined) {
      for (const object of this.store.list(request.type, request.namespace)) {
        if (this.matches(watcher, object)) watcher.buffer += this.line(watcher, 'ADDED', object);
      }
    } else {
      let events: StoreEvent[];
      try {
        events = this.store.eventsSince(fromRevision, request.type);
      } catch (error) {
        const status = (error as { toStatus?: () => unknown }).toStatus?.();
        res.end(`{"type":"ERROR","object":${JSON.stringify(status ?? { code: 500 })}}\n`);
        return;
      }
      for (const event of events) {
        const type = this.deliveryType(watcher, event);
        if (type) watcher.buffer += this.line(watcher, type, event.object);
      }
    }
    let set = this.byType.get(typeKey(request.type));
    if (!set) {
      set = new Set();
      this.byType.set(typeKey(request.type), set);
    }
    set.add(watcher);
    res.on('close', () => this.remove(watcher));
    if (request.timeoutSeconds !== undefined && request.timeoutSeconds > 0) {
      watcher.timer = setTimeout(() => this.close(watcher), request.timeoutSeconds * 1000);
      watcher.timer.unref();
    }
    if (watcher.buffer) this.markDirty(watcher);
    else res.flushHeaders();
  }

  /** Ends every watch cleanly (clients see the stream end and re-watch from their last resourceVersion). */
  dropAll(): number {
    let n = 0;
    for (const set of this.byType.values()) {
      for (const watcher of [...set]) {
        this.close(watcher);
        n++;
      }
    }
    return n;
  }

  stop(): void {
    this.unsubscribe();
    clearInterval(this.bookmarkTimer);
    this.dropAll();
  }

  private onEvent(event: StoreEvent): void {
    if (event.previous) forgetJson(event.previous);
    this.fanOut(event);
    const crd = event.resource.group === 'apiextensions.k8s.io' && event.resource.plural === 'customresourcedefinitions';
    if (event.type === 'DELETED') {
      forgetJson(event.object);
      if (crd) this.endWatchesOf(event.object);
    } else if (crd && event.type === 'MODIFIED') this.endWatchesOfUnserved(event.object);
  }

  /** A CRD update stopped serving a version: the watches through it end (a re-watch then gets 404). */
  private endWatchesOfUnserved(crd: KubeObject): void {
    const { group, names } = crd.spec ?? {};
    const set = this.byType.get(`${group}/${names?.plural}`);
    if (!set) return;
    for (const watcher of Array.from(set)) {
      if (!this.store.registry.byGroupVersionPlural(group, watcher.type.version, names.plural)) this.close(watcher);
    }
  }

  /** A CRD is gone, and its objects' DELETED events with it: kube-apiserver then ends the watches on its type. */
  private endWatchesOf(crd: KubeObject): void {
    const set = this.byType.get(`${crd.spec?.group}/${crd.spec?.names?.plural}`);
    if (!set) return;
    for (const watcher of Array.from(set)) this.close(watcher);
  }

  private fanOut(event: StoreEvent): void {
    const set = this.byType.get(typeKey(event.resource));
    if (!set || set.size === 0) return;
    let added: string | undefined;
    let modified: string | undefined;
    let deleted: string | undefined;
    // Watchers through another version of a CRD than the stored one get the event's object in their version.
    let viewType: ResourceType | undefined;
    let view: KubeObject | undefined;
    for (const watcher of set) {
      if (watcher.holdThrough) {
        if (Number(event.object.metadata.resourceVersion) <= watcher.holdThrough) continue;
        watcher.holdThrough = 0;
      }
      const type = this.deliveryType(watcher, event);
      if (!type) continue;
      if (watcher.type !== viewType) {
        viewType = watcher.type;
        view = this.store.viewAs(watcher.type, event.object);
      }
      if (watcher.table) watcher.buffer += this.line(watcher, type, view!);
      else if (view !== event.object) watcher.buffer += line(type, view!);
      else if (type === 'ADDED') watcher.buffer += added ??= line('ADDED', event.object);
      else if (type === 'MODIFIED') watcher.buffer += modified ??= line('MODIFIED', event.object);
      else watcher.buffer += deleted ??= line('DELETED', event.object);
      this.markDirty(watcher);
    }
  }

  private line(watcher: Watcher, type: string, stored: KubeObject): string {
    const object = this.store.viewAs(watcher.type, stored);
    if (!watcher.table) return line(type, object);
    const table = toTable(watcher.type, [object], { resourceVersion: object.metadata.resourceVersion }, Date.now());
    if (watcher.sentColumns) table.columnDefinitions = [];
    watcher.sentColumns = true;
    return `{"type":"${type}","object":${JSON.stringify(table)}}\n`;
  }

  private deliveryType(watcher: Watcher, event: StoreEvent): 'ADDED' | 'MODIFIED' | 'DELETED' | undefined {
    const now = this.matches(watcher, event.object);
    if (event.type === 'ADDED') return now ? 'ADDED' : undefined;
    if (event.type === 'DELETED') return now ? 'DELETED' : undefined;
    const before = event.previous ? this.matches(watcher, event.previous) : now;
    if (now && before) return 'MODIFIED';
    if (now) return 'ADDED';
    if (before) return 'DELETED';
    return undefined;
  }

  private matches(watcher: WatchRequest, object: KubeObject): boolean {
    if (watcher.namespace !== undefined && object.metadata.namespace !== watcher.namespace) return false;
    return watcher.label.matches(object) && watcher.field.matches(object);
  }

  private markDirty(watcher: Watcher): void {
    this.dirty.add(watcher);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const watcher of this.dirty) {
      if (watcher.closed || !watcher.buffer) continue;
      watcher.res.write(watcher.buffer);
      watcher.buffer = '';
      if (watcher.res.writableLength > this.maxBufferedBytes) this.close(watcher);
    }
    this.dirty.clear();
  }

  private sendBookmarks(): void {
    const revision = String(this.store.currentRevision());
    for (const set of this.byType.values()) {
      for (const watcher of set) {
        if (!watcher.bookmarks) continue;
        const object = { kind: watcher.type.kind, apiVersion: apiVersionOf(watcher.type), metadata: { resourceVersion: revision } };
        watcher.buffer += `{"type":"BOOKMARK","object":${JSON.stringify(object)}}\n`;
        this.markDirty(watcher);
      }
    }
  }

  private close(watcher: Watcher): void {
    if (watcher.closed) return;
    if (watcher.buffer) watcher.res.write(watcher.buffer);
    watcher.buffer = '';
    this.remove(watcher);
    watcher.res.end();
  }

  private remove(watcher: Watcher): void {
    watcher.closed = true;
    if (watcher.timer) clearTimeout(watcher.timer);
    this.byType.get(typeKey(watcher.type))?.delete(watcher);
    this.dirty.delete(watcher);
  }
}

function line(type: string, object: KubeObject): string {
  return `{"type":"${type}","object":${objectJson(object)}}\n`;
}
