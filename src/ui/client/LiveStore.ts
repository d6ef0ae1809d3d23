import { describeError, gql, isUnauthenticated } from './api.js';
import { backoffMs, type ConnectionState, type LiveConnection } from './live.js';
import { ROLLOUTS, SERVER_INFO, SUB_AGENT_RECREATED, SUB_CLUSTER_UPGRADE_OBSERVED, SUB_NODE_AGENT_REPLACED, SUB_ROLLOUT_UPDATED } from './queries.js';
import type { NodeAgentReplacedSubscription, ServerInfoQuery } from './generated/graphql.js';
import { ACTIVE_STATES, type AgentRecreation, type FeedRow, type NodeAgentReplacement, type RolloutSummary, type UpgradeObservation } from './types.js';

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
  observations: UpgradeObservation[];
  recreations: AgentRecreation[];
  /** Event id the feed replayed from. */
  replayedFrom: string | null;
  errors: string[];
}

/**
 * The page's live state: rollouts kept current by `rolloutUpdated`, and the feed and chart series by
 * `agentRecreated` and `clusterUpgradeObserved`, all resuming after reconnects (see LiveConnection). Views read
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
    observations: [],
    recreations: [],
    replayedFrom: null,
    errors: [],
  };
  private readonly rollouts = new Map<string, RolloutSummary>();
  private readonly versions = new Map<string, number>();
  private feed: FeedRow[] = [];
  private observations: UpgradeObservation[] = [];
  private recreations: AgentRecreation[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly stops: (() => void)[] = [];
  private scheduled = false;
  private dirty: Partial<LiveSnapshot> = {};
  /** Collections changed since the last notification; copied once per notification, not once per event. */
  private readonly changed = new Set<'rollouts' | 'feed' | 'observations' | 'recreations'>();

  constructor(private readonly live: LiveConnection) {}

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
      this.live.subscribe({
        query: SUB_AGENT_RECREATED,
        after: replayFrom,
        select: (data) => data.agentRecreated,
        idOf: (item) => Number(item.eventId),
        onItem: (item) => {
          this.recreations.push(item);
          if (this.recreations.length > SERIES_LIMIT) this.recreations = this.recreations.slice(-SERIES_LIMIT);
          this.addFeedRow({ kind: 'agent', id: Number(item.eventId), at: item.readyAt ?? '', item });
          this.changed.add('recreations');
          this.update({});
        },
        onError: (message) => this.reportError(`agent recreations: ${message}`),
      }),
      this.live.subscribe({
        query: SUB_CLUSTER_UPGRADE_OBSERVED,
        after: replayFrom,
        select: (data) => data.clusterUpgradeObserved,
        idOf: (item) => Number(item.eventId),
        onItem: (item) => {
          this.observations.push(item);
          if (this.observations.length > SERIES_LIMIT) this.observations = this.observations.slice(-SERIES_LIMIT);
          this.addFeedRow({ kind: 'cluster', id: Number(item.eventId), at: item.observedAt, item });
          this.changed.add('observations');
          this.update({});
        },
        onError: (message) => this.reportError(`cluster upgrades: ${message}`),
      }),
      this.live.subscribe({
        query: SUB_NODE_AGENT_REPLACED,
        after: replayFrom,
        select: (data) => data.events,
        idOf: (event) => Number(event.id),
        onItem: (event) => {
          const item = toNodeAgentReplacement(event);
          this.addFeedRow({ kind: 'node', id: Number(event.id), at: event.createdAt, item });
          this.update({});
        },
        onError: (message) => this.reportError(`node agents: ${message}`),
      }),
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

  private addFeedRow(row: FeedRow): void {
    // Two subscriptions feed one list: insert by id (newest first); the common case is a new head.
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
      if (this.changed.has('observations')) next.observations = this.observations.slice();
      if (this.changed.has('recreations')) next.recreations = this.recreations.slice();
      this.changed.clear();
      this.snap = next;
      this.dirty = {};
      for (const listener of this.listeners) listener();
    }, 50);
  }
}

/** The feed row of a NodeAgentReplaced event: its typed payload (Event.nodeAgentReplacement, read by the server through its schema). */
function toNodeAgentReplacement(event: NodeAgentReplacedSubscription['events']): NodeAgentReplacement {
  const replaced = event.nodeAgentReplacement;
  return {
    eventId: event.id,
    rolloutId: event.rolloutId,
    node: replaced?.node ?? '',
    daemonSet: replaced?.daemonSet ?? null,
    oldImage: replaced?.oldImage ?? null,
    newImage: replaced?.newImage ?? null,
    peerPodsRestarted: replaced?.peerPodsRestarted ?? null,
    seconds: replaced?.seconds ?? null,
    at: event.createdAt,
  };
}
