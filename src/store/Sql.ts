import Sqlite from 'better-sqlite3';
import { UnavailableError } from '../errors.js';

/** A bound parameter: what better-sqlite3 accepts (booleans and Dates are converted by the callers' row helpers). */
export type SqlValue = string | number | bigint | null | Buffer;

/** How long a write waits for another connection's lock (another process's: `rollplane token`, a test's Prisma client) before it fails. */
const DEFAULT_LOCK_WAIT_MS = 5_000;

/**
 * rollplane's SQLite connection, for every store on SQLite (history, tokens, audit, notifications): prepared
 * statements run synchronously, about 40 µs each (a Prisma 6.19 query cost about 0.8 ms of compilation on the event
 * loop: docs/adr/0009-history-hot-path-sql.md). Prisma keeps only the schema and writes the migrations, at
 * development time; the service never opens it.
 *
 * Writes never wait for a lock on the event loop: the connection has no busy timeout, and a transaction that finds
 * the database locked (by another connection to the file: another process, or a test's Prisma client) is retried
 * after a short timer. A transaction body is synchronous, so it never holds the lock across an await and the other
 * connection never waits on it for long.
 */
export class Sql {
  private readonly statements = new Map<string, Sqlite.Statement>();
  /** Raw-mode twins of statements (apart: raw mode is a property of the prepared statement, shared by its users). */
  private readonly rawStatements = new Map<string, Sqlite.Statement>();
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

  /**
   * Rows as arrays in the statement's column order (better-sqlite3's raw mode). For the API's listings: a row object
   * with named keys costs about as much again as the row's values (a rollouts page: 191 → 121 µs for 21 rows), and
   * the callers build their own objects from the columns they listed anyway.
   */
  rawAll(sql: string, params: readonly SqlValue[]): unknown[][] {
    let statement = this.rawStatements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql).raw(true);
      this.rawStatements.set(sql, statement);
    }
    return statement.all(...params) as unknown[][];
  }

  /** As `rawAll`, the first row (undefined when there is none). */
  rawGet(sql: string, params: readonly SqlValue[]): unknown[] | undefined {
    let statement = this.rawStatements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql).raw(true);
      this.rawStatements.set(sql, statement);
    }
    return statement.get(...params) as unknown[] | undefined;
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
    this.rawStatements.clear();
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

/** The value of the decimal digits of `text` at [from, from + count), or -1 when one of them is not a digit. */
function digitsAt(text: string, from: number, count: number): number {
  let value = 0;
  for (let i = from; i < from + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * `sqlDate`'s own form, `YYYY-MM-DDTHH:MM:SS.mmm+00:00`, read field by field: about 2.5× faster than `new Date(text)`,
 * which a page pays per date column per row (a rollouts page has 60–80 dates). Undefined for any other form.
 */
function sqlDateFast(text: string): Date | undefined {
  if (text.length !== 29 || text.charCodeAt(10) !== 84 /* T */ || !text.endsWith('+00:00')) return undefined;
  if (text[4] !== '-' || text[7] !== '-' || text[13] !== ':' || text[16] !== ':' || text[19] !== '.') return undefined;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  const ms = digitsAt(text, 20, 3);
  if ((year | month | day | hour | minute | second | ms) < 0) return undefined;
  // Out-of-range fields (month 13, second 61) would roll over in Date.UTC where the parser says Invalid Date.
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms));
  // Date.UTC maps years 0–99 to 1900–1999; the parser does not. Leave such years (and 31 February) to the parser.
  return date.getUTCFullYear() === year && date.getUTCDate() === day ? date : undefined;
}

/** Reads a DateTime column written by `sqlDate`, by Prisma (rows from before ADR 9, a test's Prisma client) or by SQLite's CURRENT_TIMESTAMP default. */
export function dateOf(value: string | number): Date {
  if (typeof value === 'number') return new Date(value);
  const fast = sqlDateFast(value);
  if (fast) return fast;
  // CURRENT_TIMESTAMP gives "YYYY-MM-DD HH:MM:SS" in UTC with no zone.
  return new Date(/^\d{4}-\d{2}-\d{2} \d/.test(value) ? `${value.replace(' ', 'T')}Z` : value);
}

export function dateOrNull(value: string | number | null): Date | null {
  return value === null ? null : dateOf(value);
}
