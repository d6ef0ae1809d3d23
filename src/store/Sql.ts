import Sqlite from 'better-sqlite3';
import { UnavailableError } from '../errors.js';

/** A bound parameter: what better-sqlite3 accepts (booleans and Dates are converted by the callers' row helpers). */
export type SqlValue = string | number | bigint | null | Buffer;

/** How long a write waits for another connection's lock (Prisma's, or another process's) before it fails. */
const DEFAULT_LOCK_WAIT_MS = 5_000;

/**
 * rollplane's own SQLite connection, for the history's hot path (events, rollout and target changes, revisions,
 * recreation records): prepared statements run synchronously, about 40 µs each, where a Prisma 6.19 query costs
 * about 0.8 ms of compilation on the event loop (docs/adr/0009-history-hot-path-sql.md). Prisma keeps the schema,
 * the migrations and the query side of the API.
 *
 * Writes never wait for a lock on the event loop: the connection has no busy timeout, and a transaction that finds
 * the database locked (by Prisma's connection in the middle of one of its own transactions, which needs the event
 * loop to finish) is retried after a short timer. A transaction body is synchronous, so it never holds the lock
 * across an await and the other connection never waits on it for long.
 */
export class Sql {
  private readonly statements = new Map<string, Sqlite.Statement>();
  private closed = false;

  constructor(
    readonly db: Sqlite.Database,
    private readonly lockWaitMs = DEFAULT_LOCK_WAIT_MS,
  ) {}

  static open(file: string): Sql {
    const db = new Sqlite(file, { timeout: 0 });
    db.pragma('busy_timeout = 0');
    // Per connection (unlike journal_mode): see docs/adr/0008-sqlite-durability.md.
    db.pragma('synchronous = NORMAL');
    return new Sql(db);
  }

  /** A cached prepared statement. */
  statement(sql: string): Sqlite.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  get<T>(sql: string, ...params: SqlValue[]): T | undefined {
    return this.statement(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: SqlValue[]): T[] {
    return this.statement(sql).all(...params) as T[];
  }

  run(sql: string, ...params: SqlValue[]): Sqlite.RunResult {
    return this.statement(sql).run(...params);
  }

  /**
   * Runs `body` in one write transaction (BEGIN IMMEDIATE … COMMIT; rolled back if it throws). When the database is
   * locked by another connection the whole body runs again later, so it must only read and write through this `Sql`.
   * `afterCommit` runs synchronously right after the commit, before anything else can run (and never on failure).
   */
  async transaction<T>(body: (sql: Sql) => T, afterCommit?: (result: T) => void): Promise<T> {
    const started = Date.now();
    let delay = 1;
    for (;;) {
      let result: T;
      try {
        result = this.transactionNow(body);
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (Date.now() - started > this.lockWaitMs) {
          throw new UnavailableError(`the history database stayed locked for ${this.lockWaitMs} ms`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(50, delay * 2);
        continue;
      }
      afterCommit?.(result);
      return result;
    }
  }

  /** As `transaction`, but fails at once with SQLITE_BUSY instead of waiting (for callers that cannot await). */
  transactionNow<T>(body: (sql: Sql) => T): T {
    if (this.closed) throw new UnavailableError('the history database is closed');
    return this.db.transaction(() => body(this)).immediate();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.db.close();
  }
}

/** SQLITE_BUSY and its kin: another connection holds the lock (retrying later may succeed). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_BUSY_SNAPSHOT';
}

/** Prisma's DateTime text form on SQLite (its better-sqlite3 adapter writes ISO 8601 with an explicit +00:00). */
export function sqlDate(date: Date): string {
  return date.toISOString().replace('Z', '+00:00');
}

export function sqlDateOrNull(date: Date | null | undefined): string | null {
  return date ? sqlDate(date) : null;
}

/** Reads a DateTime column written by Prisma or by `sqlDate` (or SQLite's CURRENT_TIMESTAMP default). */
export function dateOf(value: string | number): Date {
  if (typeof value === 'number') return new Date(value);
  // CURRENT_TIMESTAMP gives "YYYY-MM-DD HH:MM:SS" in UTC with no zone.
  return new Date(/^\d{4}-\d{2}-\d{2} \d/.test(value) ? `${value.replace(' ', 'T')}Z` : value);
}

export function dateOrNull(value: string | number | null): Date | null {
  return value === null ? null : dateOf(value);
}
