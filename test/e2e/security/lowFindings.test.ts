import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';
import { defaultStrategy } from '../../../src/domain/kinds/index.js';
import { describeWithPostgres } from '../../helpers/postgres.js';

/** Issue 18, finding 10: the low-severity items, each with the request that showed it. */
describe('search treats % and _ literally', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
    for (const message of ['100% done', 'plain', 'snake_case', 'snakeXcase']) {
      await app.domain.rollouts.create({
        kind: 'VIRTUAL_CLUSTER',
        fromVersion: '1',
        toVersion: '2',
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
        cause: { message },
        targets: [],
      });
    }
  });
  afterAll(async () => {
    await app?.close();
  });

  it.each([
    ['%', ['100% done']],
    // (`_` alone matches every rollout, rightly: ids are `ro_…`.)
    ['e_c', ['snake_case']],
    ['SNAKE', ['snakeXcase', 'snake_case']],
  ])('search %j matches only rollouts that contain it', async (search, expected) => {
    const res = await gql(app.url, 'query($s: String) { rollouts(filter: { search: $s }) { totalCount edges { node { cause { message } } } } }', { s: search });
    expect(res.errors).toBeUndefined();
    expect(res.data.rollouts.edges.map((e: any) => e.node.cause.message).sort()).toEqual(expected);
    expect(res.data.rollouts.totalCount).toBe(expected.length);
  });
});

describe('the configured admin token', () => {
  it('stays revoked when the same secret is configured again on restart; a new secret rotates it', async () => {
    const secret = 'admin-secret-that-gets-revoked-0123456789';
    const first = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: secret } });
    const admin = await first.prisma.apiToken.findUniqueOrThrow({ where: { name: 'admin' } });
    await first.domain.tokens.revoke(admin.id);
    await first.stop();
    const again = await startTestApp({ databaseFile: first.databaseFile, env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: secret } });
    const refused = await gql(again.url, '{ apiTokens { edges { node { id } } } }', {}, { authorization: `Bearer ${secret}` });
    expect(refused.status).toBe(401);
    await again.stop();
    const rotated = 'a-new-admin-secret-after-revocation-0123456789';
    const third = await startTestApp({ databaseFile: first.databaseFile, env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: rotated } });
    expect((await gql(third.url, '{ apiTokens { edges { node { id } } } }', {}, { authorization: `Bearer ${rotated}` })).status).toBe(200);
    expect((await gql(third.url, '{ serverInfo { version } }', {}, { authorization: `Bearer ${secret}` })).status).toBe(401);
    await third.stop();
    rmSync(path.dirname(first.databaseFile), { recursive: true, force: true });
  });

  it('can come from a file, and --admin-token on the command line is warned about', () => {
    const config = loadConfig({ ROLLPLANE_ADMIN_TOKEN_FILE: '/run/secrets/admin' }, [], {
      readFile: () => 'token-from-a-mounted-secret-0123456789\n',
      fileExists: () => false,
    });
    expect(config.auth).toMatchObject({ adminToken: { value: 'token-from-a-mounted-secret-0123456789', source: 'file' } });
    expect(loadConfig({}, ['--admin-token', 'token-from-the-command-line-0123456789'], { fileExists: () => false }).auth.adminToken?.source).toBe('flag');
    expect(() => loadConfig({ ROLLPLANE_ADMIN_TOKEN_FILE: '/x', ROLLPLANE_ADMIN_TOKEN: 'y'.repeat(40) }, [], { fileExists: () => false })).toThrow(
      /ROLLPLANE_ADMIN_TOKEN_FILE/,
    );
    expect(() =>
      loadConfig({ ROLLPLANE_ADMIN_TOKEN_FILE: '/missing' }, [], {
        fileExists: () => false,
        readFile: () => {
          throw new Error('ENOENT');
        },
      }),
    ).toThrow(/cannot read \/missing/);
  });
});

describe('clients that go away mid-request', () => {
  it('are logged at debug level, not as errors with a stack', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-epipe-'));
    const entries: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) entries.push(JSON.parse(line));
        done();
      },
    });
    const config = loadConfig(
      { PORT: '0', DATABASE_URL: `file:${path.join(dir, 'db.sqlite')}`, ROLLPLANE_KUBE: 'sim', ROLLPLANE_SIM_FLEET: 'pools=200', ROLLPLANE_CONTROLLERS: 'off' },
      [],
    );
    const app = await startApp(config, { logger: pino({ level: 'debug' }, sink) });
    try {
      const query = JSON.stringify({ query: '{ agentPools(first: 100) { edges { node { namespace name desiredImage runningImage } } } }' });
      for (let i = 0; i < 30; i++) {
        const controller = new AbortController();
        const pending = fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: query, signal: controller.signal }).catch(
          () => undefined,
        );
        setTimeout(() => controller.abort(), i % 5);
        await pending;
      }
      expect((await fetch(app.url.replace('/graphql', '/healthz'))).status).toBe(200);
      expect(entries.filter((e) => e.level >= 50)).toEqual([]);
    } finally {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a null through a nullable variable into a non-null input field', () => {
  // Issue 17, F10: refused with BAD_USER_INPUT, rightly, but without the field, and audited as INTERNAL_SERVER_ERROR.
  // The audit entry (and the metrics) must record what the client was told.
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  const mutation = (mark: string) => `mutation($x: Boolean) { bumpAgentImage(input: { image: "a/agent:${mark}", dryRun: $x }) { dryRun } }`;
  const entryFor = async (mark: string) => {
    const entries = await app.prisma.auditEntry.findMany({ where: { input: { contains: mark } } });
    expect(entries, mark).toHaveLength(1);
    return entries[0]!;
  };

  it('is BAD_USER_INPUT naming the argument, and audited as BAD_USER_INPUT, over HTTP and WebSocket', async () => {
    const before = await app.prisma.rollout.count();
    const overHttp = await gql(app.url, mutation('null-http'), { x: null });
    expect(overHttp.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'input' });
    expect(overHttp.errors?.[0]?.message).toContain('Argument "input" has invalid value');
    expect(await entryFor('null-http')).toMatchObject({ operation: 'bumpAgentImage', result: 'BAD_USER_INPUT' });

    const client = wsClient(app.url);
    try {
      const overWs = collect(client, mutation('null-ws'), { x: null });
      await overWs.waitFor(1);
      expect(overWs.errors).toMatchObject([[{ extensions: { code: 'BAD_USER_INPUT', field: 'input' } }]]);
    } finally {
      await client.dispose();
    }
    // The WebSocket's audit entry is written once the operation has settled, before its result is sent.
    expect(await entryFor('null-ws')).toMatchObject({ operation: 'bumpAgentImage', result: 'BAD_USER_INPUT' });
    expect(await app.prisma.rollout.count()).toBe(before);
  });
});

describeWithPostgres('an unreachable database, told to clients', (server) => {
  // Attack finding (issue 15): /readyz and UNAVAILABLE answers quoted the driver's message, `connect ECONNREFUSED
  // <host>:<port>`, so anyone could learn the database's internal address. Clients get "the database is unreachable"
  // and the code; the address goes to the server's log.
  it('names no host or port on /readyz, in UNAVAILABLE errors or in a 503, and logs the detail server-side', async () => {
    const url = await server().createDatabase();
    const address = `127.0.0.1:${server().port}`;
    const logged: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged.push(String(chunk));
        done();
      },
    });
    const admin = 'rp_unreachable_admin_token_0123456789abcdef';
    const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url, ROLLPLANE_KUBE: 'sim', ROLLPLANE_SIM_FLEET: 'empty', ROLLPLANE_CONTROLLERS: 'off' };
    const open = await startApp(loadConfig(env, []), { logger: pino({ level: 'warn' }, sink) });
    const guarded = await startApp(loadConfig({ ...env, ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: admin }, []), { logger: pino({ level: 'warn' }, sink) });
    const UNREACHABLE = /the database is unreachable \((ECONNREFUSED|57P01|08006)\)/;
    try {
      await server().shutDown('fast');
      const ready = await fetch(open.url.replace(/\/graphql$/, '/readyz'));
      const readyBody = await ready.text();
      expect(ready.status).toBe(503);
      const database = (JSON.parse(readyBody) as { checks: { name: string; error?: string }[] }).checks.find((c) => c.name === 'database');
      expect(database?.error).toMatch(UNREACHABLE);

      const read = await gql(open.url, '{ rollouts { totalCount } }');
      expect(read.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(read.errors?.[0]?.message).toMatch(UNREACHABLE);
      const write = await gql(open.url, 'mutation { bumpAgentImage(input: { image: "a/agent:v2", dryRun: true }) { created } }');
      expect(write.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(write.errors?.[0]?.message).toMatch(UNREACHABLE);
      const refused = await gql(guarded.url, '{ serverInfo { version } }', {}, { authorization: `Bearer ${admin}` });
      expect(refused.status).toBe(503);
      expect(refused.errors?.[0]?.message).toMatch(UNREACHABLE);

      for (const body of [readyBody, JSON.stringify(read), JSON.stringify(write), JSON.stringify(refused)]) {
        expect(body).not.toContain(address);
        expect(body).not.toContain(`:${server().port}`);
      }
      // The operator still learns where: the log has the driver's message.
      expect(logged.join('')).toContain(address);
    } finally {
      await server().restart();
      await open.stop();
      await guarded.stop();
    }
  }, 60_000);
});
