import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { gql } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

/**
 * Issue 17, F4: PostgreSQL up but refusing rollplane's login (its role NOLOGIN, its database closed to connections)
 * was answered 500 INTERNAL_SERVER_ERROR over HTTP, and every WebSocket, even one with an unknown token, was closed
 * 4500 with PostgreSQL's own message as the close reason (`role "…" is not permitted to log in`). It is an outage
 * like a server that is down: 503 UNAVAILABLE and 1013 Try Again Later, with no PostgreSQL text, then served again.
 */
const ROLE = 'rp_refusal_service_role';
const DATABASE = 'rp_refusal_service_db';
const ADMIN_TOKEN = 'rp_pg_refusal_admin_token_0123456789abcdef';
const UNKNOWN_TOKEN = 'rp_unknowntokenunknowntokenunknowntoken00';
/** What PostgreSQL's messages would bring along: the names, or the messages themselves. */
const LEAKS = [ROLE, DATABASE, 'not permitted to log in', 'accepting connections'];

interface Closed {
  code: number;
  reason: string;
}

function connectWs(url: string, token: string): Promise<Closed | 'acknowledged'> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type !== 'connection_ack') return;
      socket.close();
      resolve('acknowledged');
    });
    socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
    socket.on('error', reject);
  });
}

describeWithPostgres('PostgreSQL refusing the service its login', (server) => {
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  let baseUrl = '';
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const readyStatus = async () => (await fetch(`${baseUrl}/readyz`)).status;
  /** Runs SQL as the superuser in the service's database (server().admin runs in `postgres`). */
  async function inServiceDatabase(sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${server().port}/${DATABASE}` });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    await server().admin(`CREATE ROLE ${ROLE} LOGIN`);
    await server().admin(`CREATE DATABASE ${DATABASE} OWNER ${ROLE}`);
    const config = loadConfig(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: `postgresql://${ROLE}@127.0.0.1:${server().port}/${DATABASE}`,
        ROLLPLANE_KUBE: 'sim',
        ROLLPLANE_SIM_FLEET: 'empty',
        ROLLPLANE_CONTROLLERS: 'off',
        ROLLPLANE_AUTH: 'on',
        ROLLPLANE_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      [],
    );
    app = await startApp(config, { logger: pino({ level: 'silent' }) });
    baseUrl = app.url.replace(/\/graphql$/, '');
  });
  afterAll(async () => {
    await app?.stop();
  });

  /** Refuses the service's logins with `sql`, drops its open connections (as the attacker's operator did), checks, restores. */
  async function whileRefused(refuse: string, restore: string): Promise<void> {
    const url = app!.url;
    expect((await gql(url, '{ rollouts(first: 1) { totalCount } }', {}, headers)).status).toBe(200);
    await server().admin(refuse);
    try {
      await server().admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [ROLE]);
      await until('/readyz to report the database', async () => (await readyStatus()) === 503);
      const seen: string[] = [];
      for (const [query, who] of [
        ['{ rollouts(first: 1) { totalCount } }', headers],
        ['mutation { bumpAgentImage(input: { image: "a/agent:v2", dryRun: true }) { created } }', headers],
        ['{ rollouts(first: 1) { totalCount } }', { authorization: `Bearer ${UNKNOWN_TOKEN}` }],
      ] as const) {
        const res = await gql(url, query, {}, who);
        seen.push(JSON.stringify(res));
        expect(res.status, JSON.stringify(res)).toBe(503);
        expect(res.errors?.map((e) => e.extensions?.code)).toEqual(['UNAVAILABLE']);
      }
      for (const token of [ADMIN_TOKEN, UNKNOWN_TOKEN]) {
        const closed = await connectWs(url, token);
        seen.push(JSON.stringify(closed));
        expect(closed).toEqual({ code: 1013, reason: 'Try again later: the database cannot be reached' });
      }
      const readiness = await (await fetch(`${baseUrl}/readyz`)).text();
      seen.push(readiness);
      for (const text of seen) for (const leak of LEAKS) expect(text, `${leak} in ${text}`).not.toContain(leak);
    } finally {
      await server().admin(restore);
    }
    await until('/readyz to report ready again', async () => (await readyStatus()) === 200);
    const res = await gql(url, '{ rollouts(first: 1) { totalCount } }', {}, headers);
    expect(res.status).toBe(200);
    expect(res.errors).toBeUndefined();
    expect(await connectWs(url, ADMIN_TOKEN)).toBe('acknowledged');
  }

  it('answers 503 UNAVAILABLE and closes WebSockets 1013, naming nothing, while its role may not log in (28000)', async () => {
    await whileRefused(`ALTER ROLE ${ROLE} NOLOGIN`, `ALTER ROLE ${ROLE} LOGIN`);
  });

  it('does the same while its database accepts no connections (55000), and serves again once it does', async () => {
    await whileRefused(`ALTER DATABASE ${DATABASE} ALLOW_CONNECTIONS false`, `ALTER DATABASE ${DATABASE} ALLOW_CONNECTIONS true`);
  });

  it('closes a WebSocket whose token cannot be checked for an internal reason 4500 with a generic reason, not the error', async () => {
    const url = app!.url;
    // As the superuser, a table the service needs goes missing: a fault of rollplane's deployment, not an outage.
    await inServiceDatabase('ALTER TABLE "ApiToken" RENAME TO "ApiToken_hidden"');
    try {
      const closed = await connectWs(url, UNKNOWN_TOKEN);
      expect(closed).toEqual({ code: 4500, reason: 'Internal server error' });
      const res = await gql(url, '{ rollouts(first: 1) { totalCount } }', {}, { authorization: `Bearer ${UNKNOWN_TOKEN}` });
      expect(res.errors?.map((e) => e.extensions?.code)).toEqual(['INTERNAL_SERVER_ERROR']);
      expect(JSON.stringify(res)).not.toContain('ApiToken');
    } finally {
      await inServiceDatabase('ALTER TABLE "ApiToken_hidden" RENAME TO "ApiToken"');
    }
    expect(await connectWs(url, ADMIN_TOKEN)).toBe('acknowledged');
  });
});
