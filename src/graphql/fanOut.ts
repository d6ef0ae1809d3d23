import { createSourceEventStream, execute, GraphQLError, subscribe as graphqlSubscribe, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { EventLog, ReplayCharge, StreamOptions } from '../domain/EventLog.js';
import { streamOptionsOf } from '../domain/EventLog.js';
import { EVENT_SCAN_WINDOW, scanCharge } from '../domain/historyPort.js';
import { matchesFilter, type EventFilter, type StoredEvent } from '../domain/events.js';
import { AppError, ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { SUBSCRIPTION_HANDOFF_SAMPLE, type AppMetrics } from '../metrics.js';
import { formatGraphQLErrors } from './errors.js';
import type { ReplaySlots } from './replaySlots.js';
import { rawSocketOf, textFrames } from './textFrames.js';
import { canonicalJson } from '../util/canonicalJson.js';

/**
 * Shared subscription fan-out (ADR 0021). Subscribers whose operation is the same (document text, operation name,
 * variables) and whose role is the same get the same payload for an event, so each event is executed once per such
 * group and the one serialized payload is spliced into every subscriber's `next` message with its own id. A batch's
 * WebSocket frames are built once per message prefix (textFrames.ts) and written to each socket in one piece: the
 * same buffer for every subscriber with the same operation id.
 *
 * Each subscriber keeps its own position (the last event id it was sent). A subscriber whose socket holds more than
 * `maxBufferedBytes` unsent stops taking live events and catches up from the store by id once its socket drains, as a
 * resumed (`after:`) subscription does; it switches back to live delivery in the same synchronous step as a store read
 * that found nothing newer, so it gets every event once and in order, and the other subscribers never wait for it.
 */

/** Where a subscription's messages go; attached by onSubscribe to the execution arguments it returns. */
export interface FeedTarget {
  socket: WebSocket;
  /** The graphql-ws operation id. */
  id: string;
  /** The role the operation runs with: part of the group key, as it decides what a payload may contain. */
  role: string;
  /** The document as the client sent it (the group key uses the text, not a re-printed AST). */
  source: string;
  /**
   * False once the client completed the operation. graphql-ws ends a subscription it settles after the client's
   * `complete`, but the fan-out writes to the socket from the moment the subscriber joins: nothing is sent meanwhile.
   */
  wanted: () => boolean;
  /**
   * Charges events to the caller's budget at the operation's cost per event: those replayed for `after:`, and its share
   * of each live event its group executes. Absent: events are free (tests).
   */
  chargeReplay?: ReplayCharge;
}

export const FEED_TARGET = Symbol('rollplane.feedTarget');
export type FeedExecutionArgs = ExecutionArgs & { [FEED_TARGET]?: FeedTarget };

export interface FanOutOptions {
  events: EventLog;
  metrics: AppMetrics;
  logger: Logger;
  /** Unsent bytes a socket may hold before its subscriptions fall back to catching up from the store. */
  maxBufferedBytes: number;
  /** Bounds the replay pages held in memory at once (per socket and overall). */
  replaySlots: ReplaySlots;
}

/** Replay page size when a subscriber catches up from the store. */
const REPLAY_PAGE = 500;
/** Serialized payloads a group keeps by event id, so that subscribers catching up together share executions too. */
const RECENT_PAYLOADS = 1024;
/**
 * How often a lagging socket is checked for having drained. ws exposes no drain event on the WebSocket, only the
 * bufferedAmount; only subscribers that fell behind are polled.
 */
const DRAIN_POLL_MS = 20;
/**
 * Live events a subscriber holds while it positions itself or catches up from the store (reads are async, so live
 * events keep arriving meanwhile). Past this it drops them and reads the store once more instead.
 */
const HELD_LIVE_LIMIT = 1024;
/**
 * Longest a replay executes and writes events before it lets the event loop run other work (health probes, other
 * requests): a page of 500 events took 50 ms and more in one go, and many replays at once held the loop for seconds
 * (issue 34, finding 2).
 */
const REPLAY_SLICE_MS = 5;
const OPEN = 1;

const NEXT_SUFFIX = '}';
const NEXT_SUFFIX_BYTES = Buffer.from(NEXT_SUFFIX);
/**
 * Frames written to one socket in one piece at most (beyond one message): the budget is checked between pieces, so a
 * socket holds at most its budget plus this much, whatever the size of a burst.
 */
const FRAME_CHUNK_BYTES = 64 * 1024;

export class SubscriptionFanOut {
  private readonly groups = new Map<string, FeedGroup>();

  constructor(private readonly options: FanOutOptions) {}

  /** Distinct executions currently served (one per group). */
  groupCount(): number {
    return this.groups.size;
  }

  /**
   * graphql-ws's `subscribe`: runs the root field's `subscribe` resolver as graphql-js would (role check, input limits,
   * argument parsing), then serves the subscriber from its group instead of from the resolver's own stream.
   */
  async subscribe(args: FeedExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const target = args[FEED_TARGET];
    if (!target) return graphqlSubscribe(args);
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return source as ExecutionResult; // refused: errors, as graphql-js returns them
    const streamOptions = streamOptionsOf(source);
    await (source as unknown as AsyncIterator<unknown>).return?.();
    // A field served by something else than the event log keeps graphql-js's own per-subscriber execution.
    if (!streamOptions) return graphqlSubscribe(args);
    // Variables as canonical JSON: `{a,b}` and `{b,a}` share a group.
    const key = [target.role, args.operationName ?? '', target.source, canonicalJson(args.variableValues ?? {})].join('\u0000');
    let group = this.groups.get(key);
    if (!group) {
      group = new FeedGroup(this.options, args, streamOptions, () => this.groups.delete(key));
      this.groups.set(key, group);
    }
    return group.add(target, streamOptions.after).iterator();
  }

  dispose(): void {
    for (const group of [...this.groups.values()]) group.dispose();
  }
}

/** One (document, variables, role): one bus listener, one execution per matching event. */
class FeedGroup {
  private readonly subscribers = new Set<FeedSubscriber>();
  private readonly filter: EventFilter;
  private readonly predicate: (event: StoredEvent) => boolean;
  private readonly unsubscribe: () => void;
  /**
   * Payloads by event id, kept only while a subscriber of the group is catching up, so that subscribers replaying the
   * same stretch (a burst of slow clients) share executions too; bounded, and cleared when nobody replays.
   */
  private readonly recent = new Map<number, string | Promise<string>>();
  private catchingUp = 0;
  /** Live events not handled yet: delivery runs after the publishing commit's synchronous step, never inside it. */
  private readonly pending: StoredEvent[] = [];
  private scheduled = false;
  /** Live events whose payload is still executing (async resolvers); delivered strictly in publish order. */
  private inFlight = 0;
  private disposed = false;
  private tail: Promise<void> = Promise.resolve();
  /**
   * While a batch is delivered: its frames by message prefix, so that subscribers with the same operation id (a wall
   * of identical screens) are written the same buffer rather than each a copy.
   */
  private frameCache: { batch: readonly Delivery[]; byPrefix: Map<string, FrameChunk[]> } | undefined;

  constructor(
    readonly options: FanOutOptions,
    private readonly args: ExecutionArgs,
    stream: Readonly<StreamOptions>,
    private readonly onEmpty: () => void,
  ) {
    this.filter = stream.filter ?? {};
    this.predicate = stream.predicate ?? (() => true);
    this.unsubscribe = options.events.onPublished((event) => this.onLive(event));
    options.metrics.subscriptionGroups.inc();
  }

  add(target: FeedTarget, after: number | undefined): FeedSubscriber {
    const subscriber = new FeedSubscriber(this, target);
    this.subscribers.add(subscriber);
    subscriber.start(after);
    this.options.metrics.subscriptionsShared.inc();
    return subscriber;
  }

  remove(subscriber: FeedSubscriber): void {
    if (this.subscribers.delete(subscriber)) this.options.metrics.subscriptionsShared.dec();
    if (this.subscribers.size === 0) this.dispose();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.options.metrics.subscriptionGroups.dec();
    this.unsubscribe();
    for (const subscriber of [...this.subscribers]) subscriber.close();
    this.subscribers.clear();
    this.recent.clear();
    this.pending.length = 0;
    this.onEmpty();
  }

  wants(event: StoredEvent): boolean {
    return matchesFilter(event, this.filter) && this.predicate(event);
  }

  /**
   * The next page of wanted events after `afterId`: one store read, so at most REPLAY_PAGE events or, for a filter no
   * index serves, one window of EVENT_SCAN_WINDOW ids (EventPage); `scannedTo` is the last id the page covered.
   */
  async pageAfter(afterId: number): Promise<{ events: StoredEvent[]; scannedTo: number; more: boolean }> {
    const page = await this.options.events.pageAfter(this.filter, afterId, REPLAY_PAGE, EVENT_SCAN_WINDOW);
    return { events: page.events.filter(this.predicate), scannedTo: page.scannedTo, more: page.more };
  }

  /** A subscriber of this group started (+1) or stopped (-1) catching up from the store. */
  catchUpChanged(delta: 1 | -1): void {
    this.catchingUp += delta;
    if (this.catchingUp === 0) this.recent.clear();
  }

  /** The serialized `payload` of the `next` message for this event: executed once per group, then shared. */
  payloadOf(event: StoredEvent): string | Promise<string> {
    const cached = this.recent.get(event.id);
    if (cached !== undefined) return cached;
    this.options.metrics.subscriptionExecutions.inc();
    let result: ExecutionResult | Promise<ExecutionResult>;
    try {
      result = execute({ ...this.args, rootValue: event });
    } catch (error) {
      // execute reports resolver failures in `errors`; a throw is a defect, reported to the client as an internal
      // error (masked by formatGraphQLErrors) rather than thrown in the middle of a delivery.
      result = { errors: [new GraphQLError('subscription payload failed', { originalError: error as Error })] };
    }
    const payload = result instanceof Promise ? result.then((r) => this.serialize(r)) : this.serialize(result);
    if (this.catchingUp > 0) {
      this.recent.set(event.id, payload);
      if (this.recent.size > RECENT_PAYLOADS) this.recent.delete(this.recent.keys().next().value!);
    }
    return payload;
  }

  private serialize(result: ExecutionResult): string {
    return JSON.stringify(result.errors ? { ...result, errors: formatGraphQLErrors(result.errors, this.options.logger) } : result);
  }

  /**
   * The newest event id this group's listener has been handed (wanted or not), 0 before the first: a subscriber
   * joining now takes it as its position without a store read, as nothing published later has reached anyone yet.
   */
  lastSeen = 0;

  /** The bus listener: runs inside the publishing commit's synchronous step, so it only filters and queues. */
  private onLive(event: StoredEvent): void {
    if (event.id > this.lastSeen) this.lastSeen = event.id;
    if (!this.wants(event)) return;
    this.pending.push(event);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    let batch: Delivery[] = [];
    for (const event of this.pending.splice(0)) {
      if (this.subscribers.size === 0) return;
      const payload = this.payloadOf(event);
      if (typeof payload === 'string' && this.inFlight === 0) {
        batch.push({ eventId: event.id, payload, committedAt: event.createdAt.getTime() });
        continue;
      }
      if (batch.length > 0) this.deliver(batch);
      batch = [];
      // Executions run concurrently; deliveries wait for the ones before them, so every subscriber sees id order.
      this.inFlight++;
      this.tail = this.tail.then(async () => {
        try {
          this.deliver([{ eventId: event.id, payload: await payload, committedAt: event.createdAt.getTime() }]);
        } catch (error) {
          this.options.logger.error({ err: error, eventId: event.id }, 'subscription payload failed');
        } finally {
          this.inFlight--;
        }
      });
    }
    if (batch.length > 0) this.deliver(batch);
  }

  /**
   * The frames of `batch[start..]` for one subscriber's message prefix, in pieces of about FRAME_CHUNK_BYTES; shared
   * with every subscriber of the same prefix during a delivery (never changed once built: sockets queue them as is).
   */
  framesFor(batch: readonly Delivery[], start: number, prefix: MessagePrefix): FrameChunk[] {
    // Only the whole of the batch being delivered (a subscriber going live writes what it held, another batch).
    const cache = start === 0 && this.frameCache?.batch === batch ? this.frameCache.byPrefix : undefined;
    const cached = cache?.get(prefix.text);
    if (cached) return cached;
    const chunks: FrameChunk[] = [];
    let parts: Buffer[] = [];
    let bytes = 0;
    for (let i = start; i < batch.length; i++) {
      const delivery = batch[i]!;
      // Encoded once per event and group, whoever asks first.
      delivery.bytes ??= Buffer.from(delivery.payload);
      parts.push(delivery.bytes);
      bytes += delivery.bytes.length + prefix.bytes.length;
      if (bytes < FRAME_CHUNK_BYTES && i < batch.length - 1) continue;
      chunks.push({ lastEventId: delivery.eventId, frames: textFrames(prefix.bytes, parts, NEXT_SUFFIX_BYTES) });
      parts = [];
      bytes = 0;
    }
    cache?.set(prefix.text, chunks);
    return chunks;
  }

  private deliver(batch: readonly Delivery[]): void {
    const handoff = this.options.metrics.subscriptionHandoffLag;
    let i = 0;
    this.frameCache = { batch, byPrefix: new Map() };
    // Each execution is paid by the group's members, split between them: a thousand screens on one document pay next to
    // nothing, while a caller with many distinct heavy documents (a group each) pays for every execution it causes
    // (issue 34, attack 11, F4: such a viewer held /healthz for 45 s).
    const share = 1 / this.subscribers.size;
    try {
      for (const subscriber of this.subscribers) {
        const paid = subscriber.payForLive(batch.length, share);
        const offered = paid === batch.length ? subscriber.offerLive(batch) : paid > 0 && subscriber.offerLive(batch.slice(0, paid));
        if (paid < batch.length) subscriber.closeOverBudget();
        // Timed in join order, one in SUBSCRIPTION_HANDOFF_SAMPLE: the sample spans the first socket to the last.
        if (!offered || i++ % SUBSCRIPTION_HANDOFF_SAMPLE !== 0) continue;
        const written = Date.now();
        for (const delivery of batch) handoff.observe((written - delivery.committedAt) / 1000);
      }
    } finally {
      this.frameCache = undefined;
    }
    const now = Date.now();
    for (const delivery of batch) this.options.metrics.subscriptionDeliveryLag.observe((now - delivery.committedAt) / 1000);
  }
}

interface Delivery {
  eventId: number;
  payload: string;
  /** The event's createdAt (stamped at commit), for the delivery-lag histogram. */
  committedAt: number;
  /** `payload` as UTF-8, encoded when first framed. */
  bytes?: Buffer;
}

/** Frames of consecutive events for one message prefix, and the last event they carry. */
interface FrameChunk {
  lastEventId: number;
  frames: Buffer;
}

/** `{"id":<operation id>,"type":"next","payload":` of one subscriber, as text and as UTF-8. */
interface MessagePrefix {
  text: string;
  bytes: Buffer;
}

type Phase = 'positioning' | 'live' | 'catching-up' | 'closed';

/** One subscription on one socket: its position, and whether it takes live events or catches up from the store. */
class FeedSubscriber {
  private phase: Phase = 'live';
  /** The last event id sent (or passed over as unwanted while catching up). */
  private last = 0;
  private readonly prefix: MessagePrefix;
  /**
   * Where frames are written directly (rawSocketOf), looked up once: the extensions and the TCP socket are settled by
   * the handshake, before any subscription (ws computes `extensions` anew on each read).
   */
  private readonly raw: Socket | undefined;
  private endWaiters: { resolve: (result: IteratorResult<ExecutionResult>) => void; reject: (error: unknown) => void }[] = [];
  private failure: unknown;
  private readonly onSocketClose = () => this.close();
  /** Live events that arrived while positioning or catching up (the group listened before any read began). */
  private held: Delivery[] = [];
  /** More than HELD_LIVE_LIMIT arrived meanwhile: they were dropped, and the store must be read once more. */
  private heldOverflow = false;
  /** Replaying what `after:` asked for: charged to the caller (FeedTarget.chargeReplay) until it first goes live. */
  private charging = false;

  constructor(
    private readonly group: FeedGroup,
    private readonly target: FeedTarget,
  ) {
    const prefix = `{"id":${JSON.stringify(target.id)},"type":"next","payload":`;
    this.prefix = { text: prefix, bytes: Buffer.from(prefix) };
    this.raw = rawSocketOf(target.socket);
    target.socket.once('close', this.onSocketClose);
  }

  /**
   * The group listens before this reads anything, so every event committed after a read is either in what the read
   * returned or held here until the subscriber goes live; ids dedupe the overlap.
   */
  start(after: number | undefined): void {
    // Closed while the subscribe resolver ran: graphql-ws calls return() on it, but the close event has passed.
    if (this.target.socket.readyState !== OPEN) {
      this.close();
      return;
    }
    if (after === undefined && this.group.lastSeen > 0) {
      // "From now on": everything published after this step reaches the group's listener with a greater id.
      this.last = this.group.lastSeen;
    } else if (after === undefined) {
      // Nothing has been published to this group since it began listening, so every event it hands on from here was
      // published after this subscription began, even one the store read below already counts: those are all sent.
      this.phase = 'positioning';
      this.group.options.events.lastEventId().then(
        (id) => {
          if (this.isClosed()) return;
          this.goLive(id);
        },
        (error: unknown) => this.close(error),
      );
    } else {
      this.last = after;
      this.charging = this.target.chargeReplay !== undefined;
      this.beginCatchUp(false);
    }
  }

  /**
   * Live events, in id order; those at or below the position were sent already (or replayed from the store). True
   * when the subscriber was live and wrote events of this batch to its socket (for the handoff-lag sample).
   */
  offerLive(batch: readonly Delivery[]): boolean {
    if (this.phase === 'positioning' || this.phase === 'catching-up') {
      if (this.heldOverflow) return false;
      if (this.held.length + batch.length > HELD_LIVE_LIMIT) {
        this.held = [];
        this.heldOverflow = true;
      } else this.held.push(...batch);
      return false;
    }
    if (this.phase !== 'live') return false;
    // In id order: what was sent already is a leading run.
    let start = 0;
    while (start < batch.length && batch[start]!.eventId <= this.last) start++;
    if (start === batch.length) return false;
    const raw = this.raw;
    if (!raw) return this.sendEach(batch, start);
    const chunks = this.group.framesFor(batch, start, this.prefix);
    // Several pieces (a long burst) still leave in one system call.
    if (chunks.length > 1) raw.cork();
    try {
      for (const chunk of chunks) {
        if (this.overBudget()) {
          this.fellBehind();
          return false;
        }
        this.last = chunk.lastEventId;
        if (this.target.socket.readyState === OPEN && this.target.wanted()) raw.write(chunk.frames);
      }
    } finally {
      if (chunks.length > 1) raw.uncork();
    }
    return true;
  }

  /**
   * offerLive through ws's `send`, one message at a time, where frames cannot be written directly (rawSocketOf: a
   * client that negotiated compression, which this server does not offer; the canary in test/privateInternals.test.ts
   * fails if ws stops keeping its TCP socket where rawSocketOf looks).
   */
  private sendEach(batch: readonly Delivery[], start: number): boolean {
    for (let i = start; i < batch.length; i++) {
      if (this.overBudget()) {
        this.fellBehind();
        return false;
      }
      this.send(batch[i]!.eventId, batch[i]!.payload);
    }
    return true;
  }

  /** The socket holds more than its budget unsent: stop taking live events and catch up from the store once it drains. */
  private fellBehind(): void {
    this.group.options.metrics.subscriptionCatchUps.inc();
    this.beginCatchUp(true);
  }

  /**
   * Charges live events to the caller at `share` of the operation's cost each (see deliver) and returns how many of the
   * `events` it paid for, the first ones; fewer when its budget cannot pay them all (the caller then ends the
   * subscription, closeOverBudget). Subscribers not live pay for their replay pages instead.
   */
  payForLive(events: number, share: number): number {
    const charge = this.target.chargeReplay;
    if (this.phase !== 'live' || charge === undefined) return events;
    for (let paying = events; paying > 0; paying = Math.floor(paying / 2)) {
      const waitMs = charge(paying * share);
      if (typeof waitMs !== 'number') {
        // A budget asked over the network (none today): the events go out, and the subscription ends if unpaid.
        waitMs.then(
          (wait) => wait > 0 && this.closeOverBudget(),
          (error: unknown) => this.close(error),
        );
        return events;
      }
      if (waitMs <= 0) return paying;
    }
    return 0;
  }

  /**
   * Ends the subscription with RATE_LIMITED, naming the last event it received, so that the client can subscribe again
   * from there (`after:`, a replay paced by its budget) and lose nothing.
   */
  closeOverBudget(): void {
    const after = String(this.last);
    this.close(
      new AppError(
        ErrorCode.RateLimited,
        `the live events of this subscription cost more than the token's query-cost budget allows; subscribe again with after: "${after}" to go on from the last event received`,
        { details: { after } },
      ),
    );
  }

  /** Sends what was held (after the position only) and takes live events from now on. */
  private goLive(positionedAt?: number): void {
    this.phase = 'live';
    this.charging = false;
    const held = this.held;
    this.held = [];
    this.heldOverflow = false;
    if (positionedAt !== undefined) {
      // Positioning: what was held came after the subscription began (see start), whatever the store read said.
      if (held.length > 0) this.last = Math.min(held[0]!.eventId - 1, positionedAt);
      else this.last = Math.max(this.last, positionedAt);
    }
    if (held.length > 0) this.offerLive(held);
    if (positionedAt !== undefined) this.last = Math.max(this.last, positionedAt);
  }

  /** A method rather than a field test: the phase changes across the awaits of catchUp, which narrowing cannot see. */
  private isClosed(): boolean {
    return this.phase === 'closed';
  }

  private overBudget(): boolean {
    return this.target.socket.bufferedAmount > this.group.options.maxBufferedBytes;
  }

  private send(eventId: number, payload: string): void {
    this.last = eventId;
    if (this.target.socket.readyState === OPEN && this.target.wanted()) this.target.socket.send(this.prefix.text + payload + NEXT_SUFFIX);
  }

  private beginCatchUp(waitForDrain: boolean): void {
    this.phase = 'catching-up';
    this.group.catchUpChanged(1);
    this.catchUp(waitForDrain).then(
      () => this.endCatchUp(),
      (error: unknown) => {
        this.endCatchUp();
        this.group.options.logger.error({ err: error }, 'subscription catch-up from the store failed');
        this.close(error);
      },
    );
  }

  private endCatchUp(): void {
    this.group.catchUpChanged(-1);
  }

  /**
   * Replays from the store until a read finds nothing newer than the position, then goes live with the events held
   * meanwhile (or reads again if too many arrived to hold). `waitForDrain`: a subscriber that fell behind first waits
   * until its socket has sent half its budget. Pages are read one at a time per socket and a few at a time overall
   * (ReplaySlots), and no page is kept while waiting for the socket to drain.
   */
  private async catchUp(waitForDrain: boolean): Promise<void> {
    let wait = waitForDrain;
    for (;;) {
      if (wait) {
        while (this.target.socket.bufferedAmount > this.group.options.maxBufferedBytes / 2) {
          if (this.isClosed()) return;
          await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS).unref());
        }
      }
      if (this.isClosed()) return;
      const step = await this.group.options.replaySlots.run(this.target.socket, () => this.replayPage());
      if (step === 'closed' || step === 'live') return;
      if (typeof step === 'number') {
        // Over the caller's budget: wait for it without holding a replay slot, then read the page again.
        await new Promise((resolve) => setTimeout(resolve, step).unref());
        wait = false;
        continue;
      }
      wait = step === 'drain';
    }
  }

  /**
   * One page from the store, sent until the socket's budget is spent. The page lives only in this call: a suspended
   * async function keeps its locals, so a page read in catchUp itself would stay in memory while the socket drains.
   */
  private async replayPage(): Promise<'closed' | 'live' | 'more' | 'drain' | number> {
    if (this.isClosed()) return 'closed';
    if (this.charging) {
      // Charged before the read, for as many events as the page may send and the rows it may look at: a refused
      // subscriber reads nothing (a hundred of them waking together once re-read a page each only to be refused,
      // holding the loop 150–300 ms).
      const span = Math.max(0, (await this.group.options.events.lastEventId()) - this.last);
      const mayBe = Math.min(REPLAY_PAGE, span) + scanCharge(Math.min(EVENT_SCAN_WINDOW, span));
      const waitMs = mayBe > 0 ? await this.target.chargeReplay!(mayBe) : 0;
      if (this.isClosed()) return 'closed';
      if (waitMs > 0) return waitMs;
    }
    const page = await this.group.pageAfter(this.last);
    if (this.isClosed()) return 'closed';
    if (page.events.length === 0) {
      this.last = page.scannedTo;
      if (page.more) return 'more';
      if (this.heldOverflow) {
        this.heldOverflow = false;
        return 'more';
      }
      this.goLive();
      return 'live';
    }
    let sliceStart = performance.now();
    for (const event of page.events) {
      if (performance.now() - sliceStart > REPLAY_SLICE_MS) {
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
      const payload = await this.group.payloadOf(event);
      if (this.isClosed()) return 'closed';
      if (this.overBudget()) return 'drain';
      this.send(event.id, payload);
    }
    // Unwanted events after the last wanted one on this page need no second look.
    this.last = Math.max(this.last, page.scannedTo);
    return 'more';
  }

  /** Ends the subscription; with `error`, graphql-ws reports it to the client as this operation's error. */
  close(error?: unknown): void {
    if (this.isClosed()) return;
    this.phase = 'closed';
    this.failure = error;
    this.target.socket.off('close', this.onSocketClose);
    this.group.remove(this);
    for (const waiter of this.endWaiters.splice(0)) {
      if (error === undefined) waiter.resolve({ done: true, value: undefined });
      else waiter.reject(error);
    }
  }

  /**
   * What graphql-ws iterates: it never yields (messages are written to the socket directly); it ends when the
   * subscription is closed, and `return()` (client `complete`, socket closed, token revoked) closes it.
   */
  iterator(): AsyncIterableIterator<ExecutionResult> {
    const self = this;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      next() {
        if (self.phase === 'closed') {
          return self.failure === undefined ? Promise.resolve({ done: true, value: undefined }) : Promise.reject(self.failure);
        }
        return new Promise((resolve, reject) => self.endWaiters.push({ resolve, reject }));
      },
      return() {
        self.close();
        return Promise.resolve({ done: true, value: undefined });
      },
      throw(error?: unknown) {
        self.close();
        return Promise.reject(error);
      },
    };
  }
}
