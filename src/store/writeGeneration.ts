import type { Sql } from './Sql.js';

/**
 * "Everything committed to the history so far", as a value that can be compared: an answer read while the value was
 * `g` may be served again for as long as the value is still `g` (the response cache, docs/adr/0026-response-cache.md).
 * So the value must change after every commit that a history read can see, and must never come back.
 */
export interface WriteGeneration {
  /** The generation now; null while it cannot be known (then nothing may be served from before). */
  current(): string | null;
  /**
   * A change this replica learned of another way: an event of another replica's about to be delivered to this one's
   * subscribers, whose announcement may arrive later (another connection). Whoever reads on receiving an event must
   * not be served an answer from before it.
   */
  bump(): void;
  stop(): Promise<void>;
}

/**
 * SQLite: asked of the database itself on every call, so no write can be missed, whoever makes it. `data_version`
 * changes when another connection commits (another process's: `rollplane token` on the same file);
 * `total_changes()` counts the rows this connection (rollplane's own, the history's) has changed. One prepared
 * statement, about 7 µs.
 */
export class SqliteWriteGeneration implements WriteGeneration {
  constructor(private readonly sql: Sql) {}

  current(): string {
    const [version, changes] = this.sql.rawGet('SELECT data_version, total_changes() FROM pragma_data_version', []) as [number, number];
    return `${version}.${changes}`;
  }

  /** Nothing to do: every commit, whichever connection made it, is already counted by the database. */
  bump(): void {}

  async stop(): Promise<void> {}
}

/** The channel PostgreSQL's history tables announce their writes on (migration 20261202030000_announce_history_writes). */
export const HISTORY_WRITES_CHANNEL = 'rollplane_writes';

/**
 * PostgreSQL: a counter this replica moves on. Asking the database on every request would cost the round trip the
 * cache saves, and no in-database counter is both transactional and free of contention between writers. So:
 * - this replica's own history commits move it at COMMIT, before the writer goes on (`bump`);
 * - other replicas' commits move it when their announcement arrives (a statement trigger on the history tables sends
 *   NOTIFY rollplane_writes, delivered at COMMIT) — within milliseconds, the one window in which an answer from before
 *   another replica's commit can still be served;
 * - while announcements cannot arrive the generation is unknown and nothing is served: while the LISTEN connection is
 *   down (`suspend` … `resume`), and while it has not proved for {@link MAX_SILENCE_MS} that it still delivers
 *   (`deliveredBefore`: its heartbeats), since a connection can stay open and deliver nothing.
 */
export class AnnouncedWriteGeneration implements WriteGeneration {
  /** How long the LISTEN connection may go without an answered heartbeat before the generation is unknown. */
  static readonly MAX_SILENCE_MS = 1_500;
  private counter = 0;
  private known = false;
  private stopListening: () => Promise<void> = async () => {};

  constructor(
    /** When the LISTEN connection last proved it delivers: every announcement committed before then has arrived. */
    private readonly deliveredBefore: () => number = () => Date.now(),
    private readonly now: () => number = Date.now,
  ) {}

  current(): string | null {
    if (!this.known || this.now() - this.deliveredBefore() > AnnouncedWriteGeneration.MAX_SILENCE_MS) return null;
    return String(this.counter);
  }

  bump(): void {
    this.counter += 1;
  }

  suspend(): void {
    this.known = false;
    this.counter += 1;
  }

  resume(): void {
    this.counter += 1;
    this.known = true;
  }

  /** What `stop` ends: the LISTEN connection. */
  listening(stop: () => Promise<void>): void {
    this.stopListening = stop;
  }

  async stop(): Promise<void> {
    this.known = false;
    await this.stopListening();
  }
}

/**
 * The generation of answers read from the informers' views as well as the history: it moves when either does
 * (`informerChanges` counts the changes the informer caches took). A bump is the history's.
 */
export function withInformerChanges(history: WriteGeneration, informerChanges: () => number): WriteGeneration {
  return {
    current: () => {
      const written = history.current();
      return written === null ? null : `${written}/${informerChanges()}`;
    },
    bump: () => history.bump(),
    stop: async () => {},
  };
}
