import { insertEvents, lastEventId, listEventsAfter, listEventsBefore } from '../store/events.js';
import type { Sql } from '../store/Sql.js';
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
}

/**
 * The append-only history: every state change is committed to the Event table first, then published on the bus.
 * Each commit and its publication happen in one synchronous step, so publish order equals id order in this process; a
 * subscriber can therefore treat "id > last seen" as its complete, gap-free position.
 */
export class EventLog {
  private pendingAppends: { events: NewEvent[]; resolve: (stored: StoredEvent[]) => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly sql: Sql,
    private readonly bus: EventBus,
  ) {}

  /**
   * Runs `change` in one transaction together with the insertion of the events it returns, then publishes them.
   * Nothing is published when the transaction fails. `change` is synchronous (it runs inside the transaction) and may
   * run more than once if the database was locked.
   */
  commit<T>(change: (sql: Sql) => { result: T; events: readonly NewEvent[] }): Promise<T> {
    return this.sql.transaction(
      (sql) => {
        const { result, events } = change(sql);
        return { result, stored: insertEvents(sql, events) };
      },
      // Published in the same synchronous step as the commit: no other commit can publish in between, so the bus
      // sees events in id order.
      ({ stored }) => this.publish(stored),
    ).then(({ result }) => result);
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
      const stored = await this.sql.transaction(
        (sql) => insertEvents(sql, batch.flatMap((b) => b.events)),
        (inserted) => this.publish(inserted),
      );
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

  /** A page of history after `afterId` (exclusive), oldest first. */
  async listAfter(filter: EventFilter, afterId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return listEventsAfter(this.sql, filter, afterId, limit);
  }

  /** A page of history before `beforeId` (exclusive; the newest when undefined), newest first. */
  async listBefore(filter: EventFilter, beforeId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return listEventsBefore(this.sql, filter, beforeId, limit);
  }

  async lastEventId(): Promise<number> {
    return lastEventId(this.sql);
  }

  /**
   * Calls `listener` for every event published from now on, in id order, inside the publishing commit's synchronous
   * step (so it must only filter and queue). Returns the function that stops it.
   */
  onPublished(listener: (event: StoredEvent) => void): () => void {
    return this.bus.subscribe(listener);
  }

  /**
   * The newest event id, read synchronously. With the in-process bus a caller that reads this and registers for live
   * events in the same synchronous step has a gap-free position: no commit can publish in between (ADR 0003).
   */
  positionNow(): number {
    return lastEventId(this.sql);
  }

  /**
   * A page of history after `afterId`, read synchronously (see positionNow): a reader that finds nothing new and
   * switches to live delivery in the same step misses nothing and sees nothing twice.
   */
  pageAfterNow(filter: EventFilter, afterId: number, limit: number): StoredEvent[] {
    return listEventsAfter(this.sql, filter, afterId, limit);
  }

  /** Replays what came after `options.after` from the store, then continues live: no gap, no duplicate. */
  stream(options: StreamOptions = {}): AsyncIterableIterator<StoredEvent> {
    return new EventStream(this.sql, this.bus, options);
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
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly sql: Sql,
    bus: EventBus,
    readonly options: Readonly<StreamOptions>,
  ) {
    this.filter = options.filter ?? {};
    this.predicate = options.predicate ?? (() => true);
    // Subscribe before reading the position, so nothing committed in between is lost.
    this.unsubscribe = bus.subscribe((event) => this.onLive(event));
    this.behind = options.after !== undefined;
    this.ready =
      options.after !== undefined
        ? Promise.resolve().then(() => {
            this.last = options.after!;
          })
        : Promise.resolve().then(() => {
            this.last = Math.max(this.last, lastEventId(sql));
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
        this.last = fromReplay.id;
        return { done: false, value: fromReplay };
      }
      if (this.behind) {
        this.behind = false;
        const page = listEventsAfter(this.sql, this.filter, this.last, REPLAY_PAGE);
        this.replayed = page.filter(this.predicate);
        // A full page may have more behind it; a filtered-out page still advances the position.
        if (page.length === REPLAY_PAGE) {
          this.behind = true;
          if (this.replayed.length === 0) this.last = page[page.length - 1]!.id;
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
