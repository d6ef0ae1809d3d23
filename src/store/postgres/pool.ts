import pg from 'pg';

/**
 * A pg pool that reads the columns of the schema (prisma/models, as Prisma's migrations create them) as rollplane expects:
 * - `TIMESTAMP(3)` (without time zone, holding UTC; OID 1114) as a UTC Date. pg's default parses it in the process's
 *   local zone, which shifts every date by the UTC offset when TZ is not UTC (research/postgres-spike.md §7.8);
 * - int8 (OID 20, e.g. COUNT(*)) as a number; rollplane's counts and ids are far below 2^53.
 * Dates are always sent as ISO strings (`isoOf`), never as Date objects (pg would send local time).
 */
const TIMESTAMP_OID = 1114;
const INT8_OID = 20;

/** How long a query waits to get a connection (a new one, or a free one from the pool) before failing UNAVAILABLE. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * How long the server lets one statement run (statement_timeout) before it cancels it (57014, answered UNAVAILABLE):
 * rollplane's statements take milliseconds, so this only ends a lock wait or a plan gone wrong, which would otherwise
 * hold a pooled connection and the request behind it. The connection stays usable.
 */
export const STATEMENT_TIMEOUT_MS = 30_000;
/**
 * How long pg waits for any answer to a query (query_timeout) before failing it: the server said nothing at all, not
 * even the statement timeout's cancellation (stopped or frozen backends, a half-open connection behind a NAT). The
 * connection is then destroyed: it still waits for that answer. Without it a request waited for as long as the stall
 * (attack 7: about ten minutes).
 */
export const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 5_000;
/**
 * How long the server lets a session sit in an open transaction without a statement (idle_in_transaction_session_
 * timeout) before it ends the session, rolling back and releasing its locks. rollplane sends a transaction's next
 * statement as soon as the previous one answers, so only a replica that froze or was cut off mid-transaction gets
 * there, and until then it held its locks for every replica: the launch lock of a kind, rollout rows, the event-log
 * lock (attack 9: every replica's writes stopped for as long as one replica was frozen or partitioned, and a partition
 * that drops the connection silently lasts until TCP keepalive, hours).
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

export interface PoolTimeouts {
  statementTimeoutMs: number;
  queryTimeoutMs: number;
  idleInTransactionMs: number;
}

export const DEFAULT_POOL_TIMEOUTS: PoolTimeouts = {
  statementTimeoutMs: STATEMENT_TIMEOUT_MS,
  queryTimeoutMs: QUERY_TIMEOUT_MS,
  idleInTransactionMs: IDLE_IN_TRANSACTION_TIMEOUT_MS,
};

const parseUtcTimestamp = (text: string) => new Date(`${text.replace(' ', 'T')}Z`);

/**
 * `timeouts`: the bounds above by default; `false` for the migration runner's connection, whose advisory lock waits for
 * another replica's migrations and whose statements (an index over a long history) may rightly take minutes.
 */
export function historyPool(url: string, max = 10, timeouts: PoolTimeouts | false = DEFAULT_POOL_TIMEOUTS): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    keepAlive: true,
    // Without a bound, a connection attempt to an unreachable host (a partition rather than a refusal) waits for the
    // OS, minutes, and so does every request behind it; this also bounds the wait for a free pooled connection.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Queries queued on a connection go out without waiting for the answers before them (each with its own Sync, so
    // each succeeds or fails alone): what lets commitWithEvents send COMMIT with the INSERT. Code that awaits each
    // query, all the rest, is unchanged by it.
    pipeline: true,
    ...(timeouts && {
      statement_timeout: timeouts.statementTimeoutMs,
      query_timeout: timeouts.queryTimeoutMs,
      idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
    }),
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
        if (oid === TIMESTAMP_OID) return parseUtcTimestamp;
        if (oid === INT8_OID) return Number;
        return pg.types.getTypeParser(oid, format);
      }) as typeof pg.types.getTypeParser,
    },
  });
  // An idle connection that the server drops (a restart, a failover, an idle timeout on a proxy) is reported here;
  // without a listener the EventEmitter throws it and the process dies. The pool has already discarded that client,
  // and the next query opens a new connection or fails with UNAVAILABLE.
  pool.on('error', () => {});
  return pool;
}

export function isoOf(date: Date): string;
export function isoOf(date: Date | null | undefined): string | null;
export function isoOf(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}

/** `?` placeholders (the statements shared with SQLite) → `$1…$n`. The shared statements have no `?` in literals. */
export function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/** How many distinct statement texts get a name; beyond it (never reached by rollplane's own set) they go unnamed. */
const NAMED_STATEMENTS_KEPT = 1_000;
const statementNames = new Map<string, string>();

/**
 * A query as a named prepared statement: each pooled connection parses and plans the text once (at its first use
 * there) and afterwards only binds and runs it, where an unnamed statement is parsed and planned on every request
 * (most of the server's work for the API's small reads). The same text has the same name in every connection of the
 * process, as pg requires. Only for statements that name their columns: a prepared `SELECT *` fails ("cached plan
 * must not change result type") on a connection that prepared it before a migration added a column.
 */
export function preparedQuery(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < NAMED_STATEMENTS_KEPT) {
    name = `rp_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name === undefined ? { text, values } : { name, text, values };
}

/**
 * Call right after checking a connection out of a pool; returns what to call before releasing it. pg-pool removes its
 * own 'error' listener while a connection is lent, so a server that ends the connection between two of the borrower's
 * queries (a restart, an administrator's pg_terminate_backend) emits 'error' with no listener: an uncaught exception,
 * and the process dies. With this listener the failure is only noted; the borrower's next query fails as usual, and
 * the returned function hands the failure back so that the connection is destroyed rather than pooled again.
 */
export function watchLentConnection(client: pg.PoolClient): () => Error | undefined {
  let failure: Error | undefined;
  const noteFailure = (error: Error) => {
    failure = error;
  };
  client.on('error', noteFailure);
  return () => {
    client.removeListener('error', noteFailure);
    return failure;
  };
}
