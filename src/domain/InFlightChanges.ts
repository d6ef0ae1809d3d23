import type { HistoryStore } from './historyPort.js';
import type { EventLog } from './EventLog.js';
import type { NewEvent, RolloutKind } from './events.js';

/** One kind's view of InFlightChanges. */
export interface InFlightNotes<T extends object> {
  get(namespace: string, name: string): T | undefined;
  put(namespace: string, name: string, note: T): Promise<void>;
  complete(namespace: string, name: string, events: readonly NewEvent[]): Promise<void>;
}

/** Completions handed in within this window share one transaction. */
const COMPLETE_WINDOW_MS = 10;
const COMPLETE_MAX_BATCH = 500;

interface Completion {
  key: string;
  kind: RolloutKind;
  namespace: string;
  name: string;
  events: readonly NewEvent[];
  resolve: () => void;
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
  private readonly mirror = new Map<string, object>();
  private completions: Completion[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: HistoryStore,
    private readonly log: EventLog,
  ) {}

  /** Fills the mirror from the table; call (and await) before controllers read it. */
  async reload(): Promise<void> {
    const rows = await this.store.read.allInFlight();
    this.mirror.clear();
    for (const row of rows) {
      try {
        this.mirror.set(keyOf(row.kind as RolloutKind, row.namespace, row.name), JSON.parse(row.payload) as object);
      } catch {
        // A row that is not JSON cannot describe any work; completing its target overwrites it.
      }
    }
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
    return this.mirror.get(keyOf(kind, namespace, name));
  }

  /** Notes work in flight (replacing any note of the target); resolves once the note is committed. */
  async put(kind: RolloutKind, namespace: string, name: string, note: object): Promise<void> {
    const payload = JSON.stringify(note);
    await this.store.transaction(
      (tx) => tx.putInFlight({ kind, namespace, name, payload }, new Date()),
      () => this.mirror.set(keyOf(kind, namespace, name), JSON.parse(payload) as object),
    );
  }

  /**
   * Removes the target's note and appends `events`, atomically; resolves once committed. Completions within a few
   * milliseconds of each other share a transaction (many agents become ready together).
   */
  complete(kind: RolloutKind, namespace: string, name: string, events: readonly NewEvent[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.completions.push({ key: keyOf(kind, namespace, name), kind, namespace, name, events, resolve, reject });
      if (this.completions.length >= COMPLETE_MAX_BATCH) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), COMPLETE_WINDOW_MS);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.completions;
    this.completions = [];
    if (batch.length === 0) return;
    this.log
      .commit(function* (tx) {
        for (const c of batch) yield* tx.deleteInFlight(c.kind, c.namespace, c.name);
        return { result: undefined, events: batch.flatMap((c) => c.events) };
      })
      .then(
        () => {
          for (const c of batch) {
            this.mirror.delete(c.key);
            c.resolve();
          }
        },
        (error: unknown) => {
          for (const c of batch) c.reject(error);
        },
      );
  }
}

function keyOf(kind: RolloutKind, namespace: string, name: string): string {
  return `${kind}|${namespace}/${name}`;
}
