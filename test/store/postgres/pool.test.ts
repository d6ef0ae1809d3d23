import pg from 'pg';
import { expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import type { HistoryStore } from '../../../src/store/port.js';
import { openDatabase } from '../../../src/store/db.js';
import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { DEFAULT_POOL_TIMEOUTS, historyPool, watchLentConnection } from '../../../src/store/postgres/pool.js';
import { describeWithPostgres } from '../../helpers/postgres.js';
import { until } from '../../helpers/until.js';

describeWithPostgres('a connection lent out of the history pool', (server) => {
  it('fails its borrower, not the process, when the server ends it between two queries', async () => {
    const url = await server().createDatabase();
    const pool = historyPool(url, 2);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const client = await pool.connect();
      const giveBack = watchLentConnection(client);
      let ended = false;
      client.once('end', () => {
        ended = true;
      });
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // What a PostgreSQL restart or an administrator does to an idle connection. Without the listener this 'error'
      // has no one to hear it: an uncaught exception, which fails this test run.
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await until('the lent connection to end', () => ended, 10_000);
      await expect(client.query('SELECT 1')).rejects.toThrow();
      const failure = giveBack();
      expect(failure?.message).toMatch(/terminat/);
      client.release(failure);
      // The pool still works: the broken connection was destroyed, not handed out again.
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});

/**
 * Starts a transaction that takes the AGENT_POOL launch lock and then waits, sending nothing, until `release` is
 * called (the store awaits a promise its body yields); afterwards it runs `then` (another statement, or nothing).
 * Resolves once the lock is held.
 */
async function holdLaunchLock(store: HistoryStore, then: 'commit' | 'another statement' = 'commit') {
  let release!: () => void;
  let locked!: () => void;
  const hasLock = new Promise<void>((resolve) => (locked = resolve));
  const done = store.transaction(function* (tx) {
    yield* tx.lockLaunches('AGENT_POOL');
    locked();
    yield new Promise<void>((resolve) => (release = resolve));
    if (then === 'another statement') yield* tx.lockRollout('none');
  });
  done.catch(() => undefined);
  await hasLock;
  return { release: () => release(), done };
}

describeWithPostgres('the history pool’s timeouts', (server) => {
  it('cancels a statement that waits past the statement timeout: UNAVAILABLE, and the connection serves the next request', async () => {
    const url = await server().createDatabase();
    const holder = await openPgHistoryStore(url, { poolSize: 2 });
    const waiter = await openPgHistoryStore(url, { poolSize: 1, timeouts: { ...DEFAULT_POOL_TIMEOUTS, statementTimeoutMs: 300, queryTimeoutMs: 5_000 } });
    let release = () => {};
    try {
      const held = await holdLaunchLock(holder.store);
      release = held.release;
      const started = Date.now();
      const waiting = waiter.store.transaction(function* (tx) {
        yield* tx.lockLaunches('AGENT_POOL');
      });
      await expect(waiting).rejects.toBeInstanceOf(UnavailableError);
      await expect(waiting).rejects.toThrow('the database did not finish a statement in time (57014)');
      expect(Date.now() - started).toBeLessThan(5_000);
      // The same (only) connection answers the next request.
      expect(await waiter.store.read.findRollout('none')).toBeUndefined();
      release();
      await held.done;
    } finally {
      release();
      await holder.store.close();
      await waiter.store.close();
    }
  });

  it('fails a request the server does not answer at all within the query timeout (UNAVAILABLE), and opens a new connection for the next', async () => {
    const url = await server().createDatabase();
    const { store, pool } = await openPgHistoryStore(url, {
      poolSize: 1,
      timeouts: { ...DEFAULT_POOL_TIMEOUTS, statementTimeoutMs: 300, queryTimeoutMs: 1_000 },
    });
    const frozen: number[] = [];
    // The pool's one connection; its backend is then frozen, as behind a half-open TCP connection or a stalled host:
    // the server sends nothing, not even the statement timeout's cancellation.
    const freezeTheConnection = async () => {
      const pid = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      process.kill(pid, 'SIGSTOP');
      frozen.push(pid);
    };
    const expectUnavailableSoon = async (request: Promise<unknown>) => {
      const started = Date.now();
      await expect(request).rejects.toBeInstanceOf(UnavailableError);
      await expect(request).rejects.toThrow('the database is unreachable');
      expect(Date.now() - started).toBeLessThan(5_000);
    };
    try {
      await freezeTheConnection();
      await expectUnavailableSoon(store.read.findRollout('none'));
      await freezeTheConnection();
      await expectUnavailableSoon(store.transaction((tx) => tx.lockLaunches('AGENT_POOL')));
      // A new connection, not a frozen one, serves the next request.
      expect(await store.read.findRollout('none')).toBeUndefined();
      expect(frozen).not.toContain((await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      await store.close();
    }
  });

  it('ends a transaction left idle by a frozen replica, so that its locks go to the others', async () => {
    const url = await server().createDatabase();
    const frozen = await openPgHistoryStore(url, { poolSize: 1, timeouts: { ...DEFAULT_POOL_TIMEOUTS, idleInTransactionMs: 500 } });
    const other = await openPgHistoryStore(url, { poolSize: 1 });
    let resume = () => {};
    try {
      // Holds a kind's launch lock, then stops sending statements, as a replica frozen (SIGSTOP, a long GC pause) or
      // cut off between two statements of a transaction.
      const stalled = await holdLaunchLock(frozen.store, 'another statement');
      resume = stalled.release;
      const started = Date.now();
      // Another replica's launch gets the lock once the server has ended the idle session, not when the frozen replica
      // comes back (or never: a silent partition lasts until TCP keepalive gives up, hours).
      await other.store.transaction((tx) => tx.lockLaunches('AGENT_POOL'));
      expect(Date.now() - started).toBeLessThan(5_000);
      resume();
      await expect(stalled.done).rejects.toBeInstanceOf(UnavailableError);
      expect(await frozen.store.read.findRollout('none')).toBeUndefined();
    } finally {
      resume();
      await frozen.store.close();
      await other.store.close();
    }
  });

  it('applies the migrations on a connection without those timeouts', async () => {
    const url = await server().createDatabase();
    // A statement timeout no migration could meet: the migrations run on a connection of their own.
    const { store, migrations } = await openPgHistoryStore(url, { timeouts: { statementTimeoutMs: 1, queryTimeoutMs: 1_000, idleInTransactionMs: 1 } });
    try {
      expect(migrations.applied.length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});

describeWithPostgres('a replica’s connections', (server) => {
  it('are at most connection_limit for its stores, however many requests run at once, besides its LISTEN connections', async () => {
    const url = await server().createDatabase();
    const database = new URL(url).pathname.slice(1);
    const db = await openDatabase(`${url}?connection_limit=3`);
    try {
      let most = 0;
      const count = async () => {
        const { rows } = await server().admin<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name NOT LIKE '%listener%' AND pid <> pg_backend_pid()",
          [database],
        );
        most = Math.max(most, rows[0]!.n);
      };
      const requests = Array.from({ length: 30 }, (_, i) =>
        i % 3 === 0
          ? db.tokens.findByHash(`h${i}`)
          : i % 3 === 1
            ? db.store.read.listEventsAfter({}, 0, 10)
            : db.store.transaction((tx) => tx.lockLaunches('AGENT_POOL')),
      );
      const watching = (async () => {
        for (let i = 0; i < 10; i++) await count();
      })();
      await Promise.all([...requests, watching]);
      await count();
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(3);
    } finally {
      await db.close();
    }
  });
});
