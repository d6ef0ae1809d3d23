import { describeError, gql, isUnauthenticated } from './api.js';
import { backoffMs, type ConnectionState, type LiveConnection } from './live.js';
import type { FeedRow, LiveStream } from './liveStream.js';
import { ROLLOUTS, SERVER_INFO, SUB_ROLLOUT_UPDATED } from './queries.js';
import type { ServerInfoQuery } from './generated/graphql.js';
import { ACTIVE_STATES, type RolloutSummary } from './types.js';

/** How far back (in event ids, all types) the feed and charts replay on first load. */
export const HISTORY_WINDOW = 20_000;
/** Rows the feed keeps; older ones are still in History. */
export const FEED_LIMIT = 500;
/** Observations kept for the charts. */
const SERIES_LIMIT = 20_000;
/** Finished rollouts kept on the dashboard next to the active ones. */
const RECENT_FINISHED = 6;

export type ServerInfo = ServerInfoQuery['serverInfo'];

export interface LiveSnapshot {
  server: ServerInfo | null;
  connection: ConnectionState;
  /** Active rollouts first, then the most recently finished; each as of its last update. */
  rollouts: RolloutSummary[];
  /** Bumped on every update of a rollout, so that views showing its targets know to refetch. */
  rolloutVersions: ReadonlyMap<string, number>;
  /** Newest first, at most FEED_LIMIT. */
  feed: FeedRow[];
  /** The items of each stream that keeps a series (by its key), oldest first, at most SERIES_LIMIT: see useLiveSeries. */
  series: ReadonlyMap<string, readonly unknown[]>;
  /** Event id the feed replayed from. */
  replayedFrom: string | null;
  errors: string[];
}

/**
 * The page's live state: rollouts kept current by `rolloutUpdated`, and the feed and chart series by the kinds' live
 * streams (KindUi.live), all resuming after reconnects (see LiveConnection). Views read
 * snapshots through `subscribe`/`snapshot` (React's useSyncExternalStore); notifications are batched per frame so a
 * replay of thousands of events renders once.
 */
export class LiveStore {
  private snap: LiveSnapshot = {
    server: null,
    connection: 'connecting',
    rollouts: [],
    rolloutVersions: new Map(),
    feed: [],
    series: new Map(),
    replayedFrom: null,
    errors: [],
  };
  private readonly rollouts = new Map<string, RolloutSummary>();
  private readonly versions = new Map<string, number>();
  private feed: FeedRow[] = [];
  private readonly series = new Map<string, unknown[]>();
  private readonly listeners = new Set<() => void>();
  private readonly stops: (() => void)[] = [];
  private scheduled = false;
  private dirty: Partial<LiveSnapshot> = {};
  /** Collections changed since the last notification; copied once per notification, not once per event. */
  private readonly changed = new Set<'rollouts' | 'feed'>();
  /** Series changed since the last notification, by stream key. */
  private readonly changedSeries = new Set<string>();

  /** `streams`: the kinds' live subscriptions (KindUi.live), subscribed in this order. */
  constructor(
    private readonly live: LiveConnection,
    private readonly streams: readonly LiveStream[] = [],
  ) {
    // A stream's key names its feed rows and its series: two kinds sharing one would mix theirs.
    const keys = streams.map((s) => s.key);
    const repeated = keys.filter((key, i) => keys.indexOf(key) !== i);
    if (repeated.length > 0) throw new Error(`live streams share the key(s) ${repeated.join(', ')}`);
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  readonly snapshot = (): LiveSnapshot => this.snap;

  async start(): Promise<void> {
    this.stops.push(this.live.onState((connection) => this.update({ connection })));
    // The server may be restarting or unreachable when the page loads: keep asking, with back-off, until it answers.
    let server: ServerInfo | undefined;
    let failures = 0;
    while (!server) {
      try {
        server = (await gql(SERVER_INFO, {})).serverInfo;
      } catch (error) {
        this.reportError(`server info: ${describeError(error)}`);
        if (isUnauthenticated(error)) return;
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failures++)));
      }
    }
    if (failures > 0) this.dismissErrors();
    const last = Number(server.lastEventId);
    const replayFrom = String(Math.max(0, last - HISTORY_WINDOW));
    this.update({ server, replayedFrom: replayFrom });
    await this.loadRollouts();

    // rolloutUpdated from the id read before loading the list: anything that changed since is delivered again.
    this.stops.push(
      this.live.subscribe({
        query: SUB_ROLLOUT_UPDATED,
        after: server.lastEventId,
        select: (data) => data.rolloutUpdated,
        idOf: (update) => Number(update.event.id),
        onItem: (update) => this.applyRollout(update.rollout),
        onError: (message) => this.reportError(`rollout updates: ${message}`),
      }),
      ...this.streams.map((stream) =>
        stream.start(this.live, replayFrom, {
          item: (row, item) => {
            if (stream.series) this.addToSeries(stream.key, item);
            this.addFeedRow(row);
            this.update({});
          },
          error: (message) => this.reportError(message),
        }),
      ),
    );
  }

  /** Applies a rollout as returned by a mutation, ahead of its subscription update. */
  applyRollout(rollout: RolloutSummary): void {
    const known = this.rollouts.get(rollout.id);
    // An older snapshot (e.g. a replayed update) must not overwrite a newer one.
    if (known && known.updatedAt > rollout.updatedAt) return;
    this.rollouts.set(rollout.id, rollout);
    this.versions.set(rollout.id, (this.versions.get(rollout.id) ?? 0) + 1);
    this.changed.add('rollouts');
    this.update({});
  }

  /** Hides the errors reported so far (the banner's Dismiss button). */
  dismissErrors(): void {
    this.update({ errors: [] });
  }

  stop(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  private async loadRollouts(): Promise<void> {
    try {
      const [active, recent] = await Promise.all([
        // Pages of 50: the server's query cost limit refuses much larger ones.
        gql(ROLLOUTS, { filter: { states: [...ACTIVE_STATES] }, first: 50 }),
        gql(ROLLOUTS, { first: RECENT_FINISHED }),
      ]);
      for (const { node } of [...active.rollouts.edges, ...recent.rollouts.edges]) this.applyRollout(node);
    } catch (error) {
      this.reportError(`rollouts: ${describeError(error)}`);
    }
  }

  private orderedRollouts(): RolloutSummary[] {
    const all = [...this.rollouts.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
    const active = all.filter((r) => ACTIVE_STATES.includes(r.state));
    const finished = all.filter((r) => !ACTIVE_STATES.includes(r.state)).slice(0, RECENT_FINISHED);
    return [...active, ...finished];
  }

  private addToSeries(key: string, item: unknown): void {
    const series = this.series.get(key) ?? [];
    this.series.set(key, series);
    series.push(item);
    if (series.length > SERIES_LIMIT) this.series.set(key, series.slice(-SERIES_LIMIT));
    this.changedSeries.add(key);
  }

  private addFeedRow(row: FeedRow): void {
    // Several subscriptions feed one list: insert by id (newest first); the common case is a new head.
    if (this.feed.some((r) => r.id === row.id)) return;
    let index = 0;
    while (index < this.feed.length && this.feed[index]!.id > row.id) index++;
    this.feed.splice(index, 0, row);
    if (this.feed.length > FEED_LIMIT) this.feed.length = FEED_LIMIT;
    this.changed.add('feed');
    this.update({});
  }

  private reportError(message: string): void {
    this.update({ errors: [...this.snap.errors.slice(-4), message] });
  }

  private update(change: Partial<LiveSnapshot>): void {
    Object.assign(this.dirty, change);
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      const next: LiveSnapshot = { ...this.snap, ...this.dirty };
      if (this.changed.has('rollouts')) {
        next.rollouts = this.orderedRollouts();
        next.rolloutVersions = new Map(this.versions);
      }
      if (this.changed.has('feed')) next.feed = this.feed.slice();
      if (this.changedSeries.size > 0) {
        const series = new Map(this.snap.series);
        for (const key of this.changedSeries) series.set(key, this.series.get(key)!.slice());
        next.series = series;
      }
      this.changed.clear();
      this.changedSeries.clear();
      this.snap = next;
      this.dirty = {};
      for (const listener of this.listeners) listener();
    }, 50);
  }
}
