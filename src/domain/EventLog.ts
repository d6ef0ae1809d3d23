import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { scanCharge, type EventPage, type HistoryReads, type HistoryStore, type HistoryTx, type Step, type WithEvents } from './historyPort.js';
import type { EventBus } from './EventBus.js';
import { matchesFilter, type EventFilter, type NewEvent, type StoredEvent } from './events.js';

/** Replay page size when catching up from the store. */
const REPLAY_PAGE = 500;
/** Live events buffered per subscriber before it falls back to re-reading the store (bounds memory of slow clients). */
const LIVE_BUFFER_LIMIT = 10_000;

export interface StreamOptions {
  filter?: EventFilter;
  /** Extra condition on the event (e.g. a payload field); applied to replayed and live events alike. */
  predicate?: (event: StoredEvent) => boolean;
  /** Resume after this event id; undefined = only events committed after the stream starts. */
  after?: number;
  /** Charges the events replayed from the store for `after` to whoever asked (see ReplayCharge). */
  chargeReplay?: ReplayCharge;
}

/**
 * Charges the replay of `events` stored events to the caller that asked for it (a subscription's `after:`): resolves to
 * 0 when granted, else to the milliseconds to wait before asking again (nothing was charged then). A replay costs
 * what sending that many events costs, so one caller's replays are paced by its own budget instead of holding the
 * process (issue 34, finding 2). Only what was asked for is charged: a subscriber that falls behind live events and
 * catches up from the store is not.
 */
export type ReplayCharge = (events: number) => number | Promise<number>;

/** Waits until `charge` grants `events` (or `stopped()` turns true: then false). */
export async function paceReplay(charge: ReplayCharge, events: number, stopped: () => boolean): Promise<boolean> {
  for (;;) {
    if (stopped()) return false;
    const waitMs = await charge(events);
    if (waitMs <= 0) return true;
    await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
  }
}

export interface EventLogOptions {
  /**
   * Publish what the store holds, in id order, instead of what this process committed. Required where commits of
   * one process (or of several replicas) can complete out of id order — PostgreSQL; SQLite commits and publishes in
   * one synchronous step, so its publish order is already the id order.
   */
  publishFromStore?: boolean;
}

/** Events read per round when publishing from the store. */
const PUBLISH_PAGE = 500;

/**
 * The append-only history: every state change is committed to the Event table first, then published on the bus, in
 * id order, so a subscriber can treat "id > last seen" as its complete, gap-free position. On SQLite each commit and
 * its publication happen in one synchronous step; on PostgreSQL a commit wakes a reader that publishes `id > last
 * published` from the store (ids are ordered across writers by the store, see HistoryStore.transactionWithEvents).
 */
export class EventLog {
  private pendingAppends: { events: NewEvent[]; resolve: (stored: StoredEvent[]) => void; reject: (error: unknown) => void }[] = [];
  /** publishFromStore: the id up to which the store's events are published (the reader's position). */
  private published: Promise<number> | undefined;
  /** The same, once known, for the synchronous decisions of afterCommit and catchUp. */
  private lastPublished: number | undefined;
  private publishing: Promise<void> | undefined;
  private publishAgain = false;
  /**
   * Settles once the starting position (publishFromStore) has been read. Every read a subscriber makes waits for it: a
   * subscriber's first read of the store ran before it once (another pool connection, opened faster), so what another
   * replica committed in between was neither in that read nor published, and its feed stopped there (issue 34).
   */
  private readonly positioned: Promise<unknown>;

  constructor(
    private readonly store: HistoryStore,
    private readonly bus: EventBus,
    private readonly options: EventLogOptions = {},
  ) {
    if (options.publishFromStore) {
      this.published = store.read.lastEventId();
      this.positioned = this.published.then(
        (id) => (this.lastPublished ??= id),
        () => undefined,
      );
    } else {
      this.positioned = Promise.resolve();
    }
  }

  /**
   * Runs `change` in one transaction together with the insertion of the events it returns, then publishes them.
   * Nothing is published when the transaction fails. `change` is a transaction body (a generator over `tx` steps, see
   * store/port.ts): it may run more than once and must touch the database only through `tx`.
   */
  async commit<T>(change: (tx: HistoryTx) => Step<WithEvents<T>>): Promise<T> {
    const { result } = await this.store.transactionWithEvents(change, ({ stored }) => this.afterCommit(stored));
    await this.publishing;
    return result;
  }

  /**
   * SQLite: published in the same synchronous step as the commit, so no other commit can publish in between.
   * PostgreSQL: event-writing transactions commit in id order (transactionWithEvents), so when this commit's first id
   * follows the last one published, every smaller id is published already and nothing can come between: the events are
   * published as they are, without reading them back (a round trip on the feed's path). Otherwise (another replica's
   * events came between, an id lost to a rollback, a read under way) the reader publishes them from the store.
   */
  private afterCommit(stored: readonly StoredEvent[]): void {
    if (stored.length === 0) return;
    if (!this.options.publishFromStore) {
      this.publish(stored);
      return;
    }
    if (!this.publishing && this.lastPublished !== undefined && stored[0]!.id === this.lastPublished + 1) {
      this.publish(stored);
      this.advanceTo(stored[stored.length - 1]!.id);
      return;
    }
    this.publishFromStore();
  }

  private advanceTo(id: number): void {
    this.lastPublished = id;
    this.published = Promise.resolve(id);
  }

  /**
   * Publishes what other processes committed (PostgreSQL: called on every wake-up of the store's event notifier).
   * `upTo`, when the wake-up says it, is the last id of the commit that sent it: nothing to read when that one is
   * published already (this replica's own commits announce themselves too). Only with `publishFromStore`.
   */
  catchUp(upTo?: number): Promise<void> {
    if (!this.options.publishFromStore) return Promise.resolve();
    if (upTo !== undefined && this.lastPublished !== undefined && upTo <= this.lastPublished) return this.publishing ?? Promise.resolve();
    this.publishFromStore();
    return this.publishing ?? Promise.resolve();
  }

  /** One reader at a time; a commit during a read makes it read again. */
  private publishFromStore(): void {
    if (this.publishing) {
      this.publishAgain = true;
      return;
    }
    this.publishing = (async () => {
      try {
        let last = await this.published!;
        do {
          this.publishAgain = false;
          for (;;) {
            const page = await this.store.read.listEventsAfter({}, last, PUBLISH_PAGE);
            this.publish(page.events);
            if (page.events.length > 0) last = page.events[page.events.length - 1]!.id;
            this.advanceTo(last);
            if (!page.more) break;
          }
        } while (this.publishAgain);
      } catch {
        // The store is unreachable: the next commit reads again from the last published id (or, if even the starting
        // position could not be read, from the position at that time).
        this.published = this.published!.catch(() => this.store.read.lastEventId());
      } finally {
        this.publishing = undefined;
      }
    })();
  }

  /**
   * Appends events that need no other change in the same transaction. Appends made in the same tick are grouped into
   * one transaction (many reconcilers finishing at once cost one commit), and the order of appends is kept.
   */
  append(...events: NewEvent[]): Promise<StoredEvent[]> {
    return new Promise((resolve, reject) => {
      this.pendingAppends.push({ events, resolve, reject });
      if (this.pendingAppends.length === 1) queueMicrotask(() => void this.flushAppends());
    });
  }

  private async flushAppends(): Promise<void> {
    const batch = this.pendingAppends.splice(0);
    try {
      const { stored } = await this.store.transactionWithEvents(
        function* () {
          return { result: undefined, events: batch.flatMap((b) => b.events) };
        },
        (committed) => this.afterCommit(committed.stored),
      );
      await this.publishing;
      let offset = 0;
      for (const b of batch) {
        b.resolve(stored.slice(offset, offset + b.events.length));
        offset += b.events.length;
      }
    } catch (error) {
      for (const b of batch) b.reject(error);
    }
  }

  private publish(events: readonly StoredEvent[]): void {
    for (const event of events) this.bus.publish(event);
  }

  /**
   * The events after `afterId` (exclusive), oldest first: `limit` of them, or fewer when the history ends. For the
   * domain's own reads; a reader that must bound its work (a caller's page, a replay) uses pageAfter.
   */
  async listAfter(filter: EventFilter, afterId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return (await this.pageAfter(filter, afterId, limit)).events;
  }

  /** As listAfter, before `beforeId` (exclusive; the newest when undefined), newest first. */
  async listBefore(filter: EventFilter, beforeId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return (await this.readPages((position, wanted) => this.store.read.listEventsBefore(filter, position, wanted), beforeId, limit, Number.POSITIVE_INFINITY))
      .events;
  }

  /**
   * A page of history after `afterId` (exclusive), oldest first: `limit` events, or fewer when the history ends, or
   * when its reads have looked at `maxRows` rows (then `more` says whether to go on from `scannedTo`). Each store read
   * is bounded (EventPage), and the event loop runs other work before each one: a filter that no index serves never
   * holds it for more than one read, however long the history it walks.
   */
  pageAfter(filter: EventFilter, afterId: number | undefined, limit: number, maxRows = Number.POSITIVE_INFINITY): Promise<EventPage> {
    return this.readPages((position, wanted) => this.store.read.listEventsAfter(filter, position, wanted), afterId, limit, maxRows);
  }

  private async readPages(
    read: (position: number | undefined, wanted: number) => Promise<EventPage>,
    from: number | undefined,
    limit: number,
    maxRows: number,
  ): Promise<EventPage> {
    await this.positioned;
    const events: StoredEvent[] = [];
    let position = from;
    let scannedRows = 0;
    for (;;) {
      await yieldToEventLoop();
      const page = await read(position, limit - events.length);
      events.push(...page.events);
      scannedRows += page.scannedRows;
      position = page.scannedTo;
      if (!page.more || events.length >= limit || scannedRows >= maxRows) return { events, scannedTo: page.scannedTo, more: page.more, scannedRows };
    }
  }

  async lastEventId(): Promise<number> {
    await this.positioned;
    return this.store.read.lastEventId();
  }

  /**
   * Calls `listener` for every event published from now on, in id order, inside the publishing commit's synchronous
   * step (so it must only filter and queue). Returns the function that stops it.
   */
  onPublished(listener: (event: StoredEvent) => void): () => void {
    return this.bus.subscribe(listener);
  }

  /** Replays what came after `options.after` from the store, then continues live: no gap, no duplicate. */
  stream(options: StreamOptions = {}): AsyncIterableIterator<StoredEvent> {
    return new EventStream(this.store.read, this.bus, options, this.positioned);
  }
}

/**
 * What a stream made by `EventLog.stream` was asked for, or undefined for any other iterable. The shared subscription
 * fan-out (src/graphql/fanOut.ts) lets the resolver build the stream — so that role checks, input limits and argument
 * parsing run exactly as before — then reads its options, closes it and serves the subscriber itself.
 */
export function streamOptionsOf(stream: unknown): Readonly<StreamOptions> | undefined {
  return stream instanceof EventStream ? stream.options : undefined;
}

/**
 * A hand-written async iterator rather than an async generator: `return()` must end a stream that is waiting for the
 * next live event at once (graphql-ws calls it when a client unsubscribes), which a suspended generator cannot do.
 */
class EventStream implements AsyncIterableIterator<StoredEvent> {
  private readonly filter: EventFilter;
  private readonly predicate: (event: StoredEvent) => boolean;
  private readonly live: StoredEvent[] = [];
  private readonly unsubscribe: () => void;
  private ready: Promise<void>;
  private last = 0;
  /** The store holds events this stream has not yielded and the live buffer does not have. */
  private behind: boolean;
  private replayed: StoredEvent[] = [];
  /** How far the read that found `replayed` looked (EventPage.scannedTo). */
  private replayedTo = 0;
  private closed = false;
  private wake: (() => void) | undefined;
  /** Replaying what `after` asked for, charged to the caller (options.chargeReplay) until the first read finds the end. */
  private charging: boolean;

  constructor(
    private readonly reads: HistoryReads,
    bus: EventBus,
    readonly options: Readonly<StreamOptions>,
    /** The log's starting position is known (EventLog.positioned): no read of the stream may come before. */
    positioned: Promise<unknown>,
  ) {
    this.filter = options.filter ?? {};
    this.predicate = options.predicate ?? (() => true);
    // Subscribe before reading the position, so nothing committed in between is lost.
    this.unsubscribe = bus.subscribe((event) => this.onLive(event));
    this.behind = options.after !== undefined;
    this.charging = options.after !== undefined && options.chargeReplay !== undefined;
    this.ready =
      options.after !== undefined
        ? positioned.then(() => {
            this.last = options.after!;
          })
        : positioned
            .then(() => reads.lastEventId())
            .then((id) => {
              this.last = Math.max(this.last, id);
            });
  }

  private onLive(event: StoredEvent): void {
    if (this.closed || !matchesFilter(event, this.filter) || !this.predicate(event)) return;
    if (this.live.length >= LIVE_BUFFER_LIMIT) {
      this.live.length = 0;
      this.behind = true;
    } else {
      this.live.push(event);
    }
    this.wake?.();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StoredEvent> {
    return this;
  }

  async next(): Promise<IteratorResult<StoredEvent>> {
    await this.ready;
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      const fromReplay = this.replayed.shift();
      if (fromReplay) {
        // Past the page's last event, the read looked at every id up to replayedTo and none matched.
        this.last = this.replayed.length > 0 ? fromReplay.id : Math.max(fromReplay.id, this.replayedTo);
        return { done: false, value: fromReplay };
      }
      if (this.behind) {
        this.behind = false;
        // The event loop runs other work between reads (a filter no index serves reads window by window).
        await yieldToEventLoop();
        if (this.closed) continue;
        const page = await this.reads.listEventsAfter(this.filter, this.last, REPLAY_PAGE);
        this.replayed = page.events.filter(this.predicate);
        this.replayedTo = page.scannedTo;
        // What was sent, and what was looked at to find it (a window of ids for a filter no index serves).
        const owed = this.replayed.length + scanCharge(page.scannedRows);
        if (this.charging && owed > 0 && !(await paceReplay(this.options.chargeReplay!, owed, () => this.closed))) continue;
        if (!page.more) this.charging = false;
        if (page.more) {
          this.behind = true;
          if (this.replayed.length === 0) this.last = page.scannedTo;
        }
        continue;
      }
      const event = this.live.shift();
      if (event) {
        if (event.id <= this.last) continue; // already replayed from the store
        this.last = event.id;
        return { done: false, value: event };
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<StoredEvent>> {
    this.close();
    return { done: true, value: undefined };
  }

  async throw(error?: unknown): Promise<IteratorResult<StoredEvent>> {
    this.close();
    throw error;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.live.length = 0;
    this.replayed = [];
    this.wake?.();
  }
}
