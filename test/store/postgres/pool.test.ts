import pg from 'pg';
import { expect, it } from 'vitest';
import { historyPool, watchLentConnection } from '../../../src/store/postgres/pool.js';
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
