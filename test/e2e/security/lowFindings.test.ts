import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { defaultStrategy } from '../../../src/domain/kinds/index.js';

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
        strategy: defaultStrategy('VIRTUAL_CLUSTER'),
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
    const admin = await first.db.prisma.apiToken.findUniqueOrThrow({ where: { name: 'admin' } });
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
    expect(config.auth).toMatchObject({ adminToken: 'token-from-a-mounted-secret-0123456789', adminTokenSource: 'file' });
    expect(loadConfig({}, ['--admin-token', 'token-from-the-command-line-0123456789'], { fileExists: () => false }).auth.adminTokenSource).toBe('flag');
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
