import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { seedRollout, startTestApp, type TestApp } from '../helpers/app.js';
import { startService } from '../helpers/child.js';
import { until } from '../helpers/until.js';
import { eventOf } from '../helpers/events.js';

const ADMIN = 'admin-secret-for-tests-0123456789abcdef';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('access control over HTTP and WebSocket', () => {
  let app: TestApp;
  let viewer: string;
  let deployer: string;
  let rolloutId: string;

  beforeAll(async () => {
    app = await startTestApp({
      env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_MUTATIONS_PER_MINUTE: '600', ROLLPLANE_MUTATION_BURST: '100' },
    });
    const create = async (name: string, role: string) => {
      const res = await gql(
        app.url,
        `mutation($n: String!, $r: Role!) { createApiToken(input: { name: $n, role: $r }) { secret token { id name role } } }`,
        { n: name, r: role },
        bearer(ADMIN),
      );
      expect(res.errors).toBeUndefined();
      expect(res.data.createApiToken.secret).toMatch(/^rp_[A-Za-z0-9_-]{43}$/);
      return res.data.createApiToken.secret as string;
    };
    viewer = await create('dashboard', 'viewer');
    deployer = await create('ci', 'deployer');
    rolloutId = await seedRollout(app);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 401 and UNAUTHENTICATED without a token, counts the refusal and writes no audit row for it', async () => {
    const before = await app.prisma.auditEntry.count();
    const query = await gql(app.url, '{ rollouts { totalCount } }');
    expect(query.status).toBe(401);
    expect(query.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const mutation = await gql(app.url, `mutation { pauseRollout(id: "${rolloutId}") { state } }`);
    expect(mutation.status).toBe(401);
    expect((await app.domain.rollouts.require(rolloutId)).state).toBe('PENDING');
    // An anonymous caller could otherwise fill the disk one row per request (issue 18, finding 5).
    expect(await app.prisma.auditEntry.count()).toBe(before);
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/rollplane_requests_refused_total\{reason="unauthenticated",transport="http"\} [2-9]/);
  });

  it.each([
    ['a wrong token', 'Bearer rp_wrong', 'invalid, expired or revoked token'],
    ['a malformed header', 'Token abc', 'malformed Authorization header'],
    ['an empty bearer', 'Bearer ', 'malformed Authorization header'],
  ])('refuses %s with a reason', async (_label, header, reason) => {
    const res = await gql(app.url, '{ rollouts { totalCount } }', {}, { authorization: header });
    expect(res.status).toBe(401);
    expect(res.errors?.[0]?.message).toContain(reason);
  });

  it('lets a viewer query but not mutate (FORBIDDEN, nothing changes)', async () => {
    const ok = await gql(app.url, '{ rollouts { totalCount } }', {}, bearer(viewer));
    expect(ok.data.rollouts.totalCount).toBeGreaterThanOrEqual(1);
    const refused = await gql(app.url, `mutation { pauseRollout(id: "${rolloutId}") { state } }`, {}, bearer(viewer));
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', needed: 'deployer', role: 'viewer' });
    expect((await app.domain.rollouts.require(rolloutId)).state).toBe('PENDING');
    const admin = await gql(app.url, '{ auditEntries { edges { node { operation } } } }', {}, bearer(viewer));
    expect(admin.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('lets a deployer run rollout mutations but not manage tokens', async () => {
    const paused = await gql(app.url, `mutation { pauseRollout(id: "${rolloutId}") { state } }`, {}, bearer(deployer));
    expect(paused.data.pauseRollout.state).toBe('PAUSED');
    const token = await gql(app.url, `mutation { createApiToken(input: { name: "sneaky", role: admin }) { secret } }`, {}, bearer(deployer));
    expect(token.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await app.prisma.apiToken.count({ where: { name: 'sneaky' } })).toBe(0);
  });

  it('audits every mutation with who, what, result and where; admins can read it', async () => {
    const res = await gql(app.url, '{ auditEntries(first: 50) { edges { node { actor role operation result input sourceAddress } } } }', {}, bearer(ADMIN));
    const nodes = res.data.auditEntries.edges.map((e: any) => e.node);
    expect(nodes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ actor: 'ci', role: 'deployer', operation: 'pauseRollout', result: 'OK' }),
        expect.objectContaining({ actor: 'dashboard', role: 'viewer', operation: 'pauseRollout', result: 'FORBIDDEN' }),
        expect.objectContaining({ actor: 'ci', role: 'deployer', operation: 'createApiToken', result: 'FORBIDDEN' }),
        expect.objectContaining({ actor: 'admin', role: 'admin', operation: 'createApiToken', result: 'OK' }),
      ]),
    );
    expect(JSON.stringify(nodes)).not.toContain(viewer);
  });

  it('refuses expired tokens', async () => {
    const res = await gql(
      app.url,
      `mutation { createApiToken(input: { name: "short", role: viewer, expiresInSeconds: 60 }) { secret token { id expiresAt } } }`,
      {},
      bearer(ADMIN),
    );
    const { secret, token } = res.data.createApiToken;
    expect(Date.parse(token.expiresAt) - Date.now()).toBeGreaterThan(50_000);
    expect((await gql(app.url, '{ serverInfo { version } }', {}, bearer(secret))).status).toBe(200);
    await app.prisma.apiToken.update({ where: { id: token.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await gql(app.url, '{ serverInfo { version } }', {}, bearer(secret));
    expect(expired.status).toBe(401);
    // The same words as for an unknown or revoked token: the answer tells a holder of a stolen secret nothing.
    expect(expired.errors?.[0]?.message).toBe('invalid, expired or revoked token');
  });

  it('authenticates subscriptions in connection_init and closes them at once when the token is revoked', async () => {
    const anonymous = collect(wsClient(app.url), 'subscription { events { id } }');
    await anonymous.waitFor(1);
    expect(JSON.stringify(anonymous.errors)).toMatch(/4403|Forbidden/);

    const res = await gql(app.url, `mutation { createApiToken(input: { name: "watcher", role: viewer }) { secret token { id } } }`, {}, bearer(ADMIN));
    const { secret, token } = res.data.createApiToken;
    const client = wsClient(app.url, { connectionParams: { authorization: `Bearer ${secret}` } });
    const sub = collect(client, 'subscription { events(after: "0") { id type } }');
    await sub.waitFor(1);
    expect(sub.errors).toEqual([]);
    const revoked = await gql(app.url, `mutation($id: ID!) { revokeApiToken(id: $id) { revokedAt } }`, { id: token.id }, bearer(ADMIN));
    expect(revoked.data.revokeApiToken.revokedAt).toBeTruthy();
    await until('the subscription to fail or complete', () => sub.errors.length > 0 || sub.isCompleted());
    expect(JSON.stringify(sub.errors)).toMatch(/4403|revoked/);
    expect((await gql(app.url, '{ serverInfo { version } }', {}, bearer(secret))).errors?.[0]?.message).toBe('invalid, expired or revoked token');
    await client.dispose();
  });

  it('closes a subscription when its token expires', async () => {
    const res = await gql(
      app.url,
      `mutation { createApiToken(input: { name: "expiring", role: viewer, expiresInSeconds: 60 }) { secret token { id } } }`,
      {},
      bearer(ADMIN),
    );
    const { secret, token } = res.data.createApiToken;
    await app.prisma.apiToken.update({ where: { id: token.id }, data: { expiresAt: new Date(Date.now() + 1500) } });
    const client = wsClient(app.url, { connectionParams: { authorization: `Bearer ${secret}` } });
    const sub = collect(client, 'subscription { events(after: "0") { id } }');
    await sub.waitFor(1);
    expect(sub.errors).toEqual([]);
    await until('the subscription to fail', () => sub.errors.length > 0, 10_000);
    expect(JSON.stringify(sub.errors)).toMatch(/4403.*token expired/);
    await client.dispose();
  });

  it('rate limits mutations per token with 429, Retry-After and RATE_LIMITED', async () => {
    const limited = await startTestApp({
      env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_MUTATIONS_PER_MINUTE: '1', ROLLPLANE_MUTATION_BURST: '2' },
    });
    try {
      const call = () => gql(limited.url, 'mutation { pauseRollout(id: "ro_x") { id } }', {}, bearer(ADMIN));
      expect((await call()).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await call()).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      const res = await fetch(limited.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(ADMIN) },
        body: JSON.stringify({ query: 'mutation { pauseRollout(id: "ro_x") { id } }' }),
      });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = (await res.json()) as any;
      expect(body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
      expect(body.errors[0].extensions.retryAfterSeconds).toBeGreaterThan(0);
      // Queries are not rate limited.
      expect((await gql(limited.url, '{ serverInfo { version } }', {}, bearer(ADMIN))).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('authentication settings', () => {
  it('refuses to start with authentication off on a non-loopback address', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0', ROLLPLANE_AUTH: 'off' }, [], { fileExists: () => false })).toThrow(
      /ROLLPLANE_AUTH: authentication may be off only when HOST is a loopback address/,
    );
    expect(loadConfig({ HOST: '0.0.0.0' }, [], { fileExists: () => false }).auth.enabled).toBe(true);
    expect(loadConfig({ HOST: '127.0.0.1' }, [], { fileExists: () => false }).auth.enabled).toBe(false);
    expect(() => loadConfig({ ROLLPLANE_ADMIN_TOKEN: 'short' }, [], { fileExists: () => false })).toThrow(/ROLLPLANE_ADMIN_TOKEN/);
  });

  it('prints a one-time admin token on the first start and not on the next', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-boot-'));
    try {
      const env = { DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ROLLPLANE_AUTH: 'on' };
      const first = await startService(env);
      const token = /\n\s+(rp_[A-Za-z0-9_-]{43})\n/.exec(first.stderr())?.[1];
      expect(token).toBeDefined();
      const res = await gql(first.url, '{ apiTokens { edges { node { name role } } } }', {}, bearer(token!));
      expect(res.data.apiTokens.edges.map((e: any) => e.node)).toEqual([{ name: 'admin', role: 'admin' }]);
      first.child.kill('SIGTERM');
      await first.exited;
      const second = await startService(env);
      expect(second.stderr()).not.toContain('rp_');
      second.child.kill('SIGTERM');
      await second.exited;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves HTTPS and WSS with a configured certificate', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-tls-'));
    const cert = path.join(dir, 'tls.crt');
    const key = path.join(dir, 'tls.key');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const app = await startTestApp({ env: { ROLLPLANE_TLS_CERT: cert, ROLLPLANE_TLS_KEY: key } });
    try {
      expect(app.url).toMatch(/^https:\/\//);
      const body = await new Promise<string>((resolve, reject) => {
        const req = https.request(app.url, { method: 'POST', ca: execFileSync('cat', [cert]), headers: { 'content-type': 'application/json' } }, (res) => {
          let data = '';
          res.on('data', (c) => (data += c));
          res.on('end', () => resolve(data));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ query: '{ serverInfo { kubeMode } }' }));
      });
      expect(JSON.parse(body).data.serverInfo.kubeMode).toBe('sim');
      const ca = execFileSync('cat', [cert]);
      const client = createClient({
        url: app.url.replace(/^https/, 'wss'),
        webSocketImpl: class extends WebSocket {
          constructor(url: string, protocols?: string | string[]) {
            super(url, protocols, { ca });
          }
        },
        retryAttempts: 0,
      });
      const sub = collect(client, 'subscription { events(after: "0") { id } }');
      await app.domain.events.append(eventOf('AgentRecreated'));
      await sub.waitFor(1);
      expect(sub.errors).toEqual([]);
      await client.dispose();
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
