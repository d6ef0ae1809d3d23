import { LOCAL_CLUSTER } from './clusters/model.js';
import type { HistoryStore } from './historyPort.js';
import type { EventLog } from './EventLog.js';
import type { NewEvent, RolloutKind } from './events.js';

/** One kind's view of InFlightChanges. */
export interface InFlightNotes<T extends object> {
  get(namespace: string, name: string): T | undefined;
  put(namespace: string, name: string, note: T): Promise<void>;
  /** Resolves true when the note was still there and went with `events`; false: another replica completed it. */
  complete(namespace: string, name: string, events: readonly NewEvent[]): Promise<boolean>;
}

/** Completions handed in within this window share one transaction. */
const COMPLETE_WINDOW_MS = 10;
const COMPLETE_MAX_BATCH = 500;

interface Completion {
  key: string;
  cluster: string;
  kind: RolloutKind;
  namespace: string;
  name: string;
  events: readonly NewEvent[];
  resolve: (completed: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Durable notes of work in flight on a target, for work that spans a crash: an agent recreation is noted before the
 * old agent is deleted and completed once the new one is ready. Completing removes the note and appends the history
 * events describing the work in one transaction, so the history records each piece of work exactly once, whatever
 * the process does in between (it may be killed at any point).
 *
 * Reads are served from memory: a mirror of the table, filled by `reload()` (call it whenever this replica starts
 * running controllers: another leader may have moved things on) and kept current by `put` and `complete`.
 */
export class InFlightChanges {
  /** The mirror and the pending completions, shared by every cluster's view (forCluster). */
  private readonly shared: { mirror: Map<string, object>; completions: Completion[]; timer: NodeJS.Timeout | undefined };

  constructor(
    private readonly store: HistoryStore,
    private readonly log: EventLog,
    /** The member cluster whose targets this view notes (ADR 0054); every view shares one table and one mirror. */
    readonly cluster: string = LOCAL_CLUSTER,
    shared?: InFlightChanges['shared'],
  ) {
    this.shared = shared ?? { mirror: new Map(), completions: [], timer: undefined };
  }

  /** The same notes, for the targets of another member cluster (a member's controllers get this view). */
  forCluster(cluster: string): InFlightChanges {
    return cluster === this.cluster ? this : new InFlightChanges(this.store, this.log, cluster, this.shared);
  }

  private get mirror(): Map<string, object> {
    return this.shared.mirror;
  }

  /** Fills the mirror from the table (every cluster's notes); call (and await) before controllers read it. */
  async reload(): Promise<void> {
    const rows = await this.store.read.allInFlight();
    this.mirror.clear();
    this.fill(rows);
  }

  private fill(rows: readonly { cluster: string; kind: string; namespace: string; name: string; payload: string }[]): void {
    for (const row of rows) {
      try {
        this.mirror.set(keyOf(row.cluster, row.kind as RolloutKind, row.namespace, row.name), JSON.parse(row.payload) as object);
      } catch {
        // A row that is not JSON cannot describe any work; completing its target overwrites it.
      }
    }
  }

  /**
   * Reads one cluster's notes again from the table, leaving the others' alone: the mirror is kept current by this
   * replica's own writes only, so a cluster whose controllers run on another replica (its shard's holder, ADR 0059)
   * is read again before its targets are observed here.
   */
  async reloadCluster(cluster: string): Promise<void> {
    const rows = (await this.store.read.allInFlight()).filter((row) => row.cluster === cluster);
    const prefix = `${cluster}|`;
    for (const key of [...this.mirror.keys()]) if (key.startsWith(prefix)) this.mirror.delete(key);
    this.fill(rows);
  }

  /** The notes of one kind, typed as that kind writes them. */
  of<T extends object>(kind: RolloutKind): InFlightNotes<T> {
    return {
      get: (namespace, name) => this.get(kind, namespace, name) as T | undefined,
      put: (namespace, name, note) => this.put(kind, namespace, name, note),
      complete: (namespace, name, events) => this.complete(kind, namespace, name, events),
    };
  }

  get(kind: RolloutKind, namespace: string, name: string): object | undefined {
    return this.mirror.get(keyOf(this.cluster, kind, namespace, name));
  }

  /** Notes work in flight (replacing any note of the target); resolves once the note is committed. */
  async put(kind: RolloutKind, namespace: string, name: string, note: object): Promise<void> {
    const payload = JSON.stringify(note);
    const cluster = this.cluster;
    await this.store.transaction(
      (tx) => tx.putInFlight({ ...(cluster === LOCAL_CLUSTER ? {} : { cluster }), kind, namespace, name, payload }, new Date()),
      () => this.mirror.set(keyOf(cluster, kind, namespace, name), JSON.parse(payload) as object),
    );
  }

  /**
   * Removes the target's note and appends `events`, atomically; resolves once committed, true when it did. Completions
   * within a few milliseconds of each other share a transaction (many agents become ready together).
   *
   * The events are written only with a row removed: when the row is gone, another replica completed the work (this
   * one was stopped while the target's shard moved on, ADR 0059: CI saw two AgentRecreated for one pool after a SIGSTOP
   * of the leader), and writing them again would record it twice. Then nothing is written, the mirror forgets the note
   * and this resolves false. A row that holds another note than this replica's (the stopped one wrote a later version
   * of the same work's intent before it noticed) is still this work's, and goes with its events: matching the payload
   * lost the recreation altogether (CI again, the next run).
   */
  complete(kind: RolloutKind, namespace: string, name: string, events: readonly NewEvent[]): Promise<boolean> {
    const cluster = this.cluster;
    const key = keyOf(cluster, kind, namespace, name);
    // The events of a member's work are about its objects: they carry its name unless they name a cluster themselves.
    const stamped = cluster === LOCAL_CLUSTER ? events : events.map((e) => (e.cluster === undefined ? { ...e, cluster } : e));
    const shared = this.shared;
    return new Promise((resolve, reject) => {
      shared.completions.push({ key, cluster, kind, namespace, name, events: stamped, resolve, reject });
      if (shared.completions.length >= COMPLETE_MAX_BATCH) this.flush();
      else shared.timer ??= setTimeout(() => this.flush(), COMPLETE_WINDOW_MS);
    });
  }

  private flush(): void {
    const shared = this.shared;
    if (shared.timer) clearTimeout(shared.timer);
    shared.timer = undefined;
    const batch = shared.completions;
    shared.completions = [];
    if (batch.length === 0) return;
    this.log
      .commit(function* (tx) {
        const completed: boolean[] = [];
        for (const c of batch) completed.push((yield* tx.deleteInFlight(c.kind, c.namespace, c.name, c.cluster)) > 0);
        return { result: completed, events: batch.flatMap((c, i) => (completed[i] ? c.events : [])) };
      })
      .then(
        (completed) => {
          batch.forEach((c, i) => {
            this.mirror.delete(c.key);
            c.resolve(completed[i] ?? false);
          });
        },
        (error: unknown) => {
          for (const c of batch) c.reject(error);
        },
      );
  }
}

function keyOf(cluster: string, kind: RolloutKind, namespace: string, name: string): string {
  return `${cluster}|${kind}|${namespace}/${name}`;
}
