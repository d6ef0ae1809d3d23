import type { PrismaClient } from '../store/db.js';
import { insertEvents, lastEventId, listEventsAfter, listEventsBefore, type Tx } from '../store/events.js';
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
 * Commits are serialized in this process so that publish order equals id order; a subscriber can therefore treat
 * "id > last seen" as its complete, gap-free position.
 */
export class EventLog {
  private tail: Promise<unknown> = Promise.resolve();
  private pendingAppends: { events: NewEvent[]; resolve: (stored: StoredEvent[]) => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly prisma: PrismaClient,
    private readonly bus: EventBus,
  ) {}

  /**
   * Runs `change` in one transaction together with the insertion of the events it returns, then publishes them.
   * Nothing is published when the transaction fails.
   */
  commit<T>(change: (tx: Tx) => Promise<{ result: T; events: readonly NewEvent[] }>): Promise<T> {
    const run = async (): Promise<T> => {
      const { result, stored } = await this.prisma.$transaction(async (tx) => {
        const { result, events } = await change(tx);
        return { result, stored: await insertEvents(tx, events) };
      });
      for (const event of stored) this.bus.publish(event);
      return result;
    };
    const next = this.tail.then(run, run);
    this.tail = next.catch(() => undefined);
    return next;
  }

  /**
   * Appends events that need no other change in the same transaction. Appends that arrive while a commit is running
   * are grouped into the next transaction (group commit): many reconcilers appending at once cost one commit, not one
   * each, and the order of appends is kept.
   */
  append(...events: NewEvent[]): Promise<StoredEvent[]> {
    return new Promise((resolve, reject) => {
      this.pendingAppends.push({ events, resolve, reject });
      if (this.pendingAppends.length > 1) return; // a flush is already scheduled and will take these too
      const flush = async (): Promise<void> => {
        const batch = this.pendingAppends.splice(0);
        try {
          const stored = await this.prisma.$transaction((tx) => insertEvents(tx, batch.flatMap((b) => b.events)));
          for (const event of stored) this.bus.publish(event);
          let offset = 0;
          for (const b of batch) {
            b.resolve(stored.slice(offset, offset + b.events.length));
            offset += b.events.length;
          }
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      };
      const next = this.tail.then(flush, flush);
      this.tail = next.catch(() => undefined);
    });
  }

  /** A page of history after `afterId` (exclusive), oldest first. */
  listAfter(filter: EventFilter, afterId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return listEventsAfter(this.prisma, filter, afterId, limit);
  }

  /** A page of history before `beforeId` (exclusive; the newest when undefined), newest first. */
  listBefore(filter: EventFilter, beforeId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return listEventsBefore(this.prisma, filter, beforeId, limit);
  }

  lastEventId(): Promise<number> {
    return lastEventId(this.prisma);
  }

  /** Replays what came after `options.after` from the store, then continues live: no gap, no duplicate. */
  stream(options: StreamOptions = {}): AsyncIterableIterator<StoredEvent> {
    return new EventStream(this.prisma, this.bus, options);
  }
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
    private readonly prisma: PrismaClient,
    bus: EventBus,
    options: StreamOptions,
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
        : lastEventId(prisma).then((id) => {
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
        this.last = fromReplay.id;
        return { done: false, value: fromReplay };
      }
      if (this.behind) {
        this.behind = false;
        const page = await listEventsAfter(this.prisma, this.filter, this.last, REPLAY_PAGE);
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
