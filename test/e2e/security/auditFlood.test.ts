import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';

/**
 * Issue 18, finding 5: unauthenticated clients filled the disk through the audit log (every 401 and 429 wrote up to
 * 16 KB, never pruned), and with the disk full /readyz still said ready while token requests got HTTP 500.
 */
const ADMIN = 'admin-secret-for-audit-flood-tests-0123456789';
const AUTH_ON = { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN };

describe('the audit log under a flood of refused requests', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ...AUTH_ON, ROLLPLANE_MUTATIONS_PER_MINUTE: '60', ROLLPLANE_MUTATION_BURST: '3' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('writes no row for unauthenticated or rate-limited mutations, and counts them', async () => {
    const before = await app.prisma.auditEntry.count();
    const big = { query: 'mutation($m: String) { pauseRollout(id: "x", reason: $m) { id } }', variables: { m: 'x'.repeat(500_000) } };
    for (let i = 0; i < 200; i++) {
      const res = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(big) });
      expect(res.status).toBe(401);
      await res.arrayBuffer();
    }
    const deployer = (await app.domain.tokens.create({ name: 'noisy', role: 'deployer' })).secret;
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++)
      statuses.push((await gql(app.url, 'mutation { pauseRollout(id: "ro_none") { id } }', {}, { authorization: `Bearer ${deployer}` })).status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(15);
    // Those within the burst (and any refill) were authenticated and ran (NOT_FOUND): audited; the 429s are not.
    expect(await app.prisma.auditEntry.count()).toBe(before + statuses.filter((s) => s !== 429).length);
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/rollplane_requests_refused_total\{reason="unauthenticated",transport="http"\} 200/);
    expect(metrics).toContain(`rollplane_requests_refused_total{reason="rate_limited",transport="http"} ${statuses.filter((s) => s === 429).length}`);
  });

  it('keeps each audited entry small, however large the refused request', async () => {
    const viewer = (await app.domain.tokens.create({ name: 'peeker', role: 'viewer' })).secret;
    const res = await gql(
      app.url,
      'mutation($m: String) { abortRollout(id: "x", reason: $m) { id } }',
      { m: 'y'.repeat(200_000) },
      { authorization: `Bearer ${viewer}` },
    );
    expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const entry = await app.prisma.auditEntry.findFirst({ orderBy: { id: 'desc' } });
    expect(entry).toMatchObject({ actor: 'peeker', operation: 'abortRollout', result: 'FORBIDDEN' });
    expect(entry!.input.length + (entry!.message?.length ?? 0) + entry!.operation.length).toBeLessThan(6_500);
  });
});

describe('audit retention', () => {
  it('prunes entries past the configured age and count at start', async () => {
    const first = await startTestApp({ env: AUTH_ON });
    const { databaseFile } = first;
    const old = new Date(Date.now() - 10 * 24 * 3600 * 1000);
    await first.prisma.auditEntry.createMany({ data: Array.from({ length: 5 }, () => ({ operation: 'pauseRollout', result: 'OK', createdAt: old })) });
    await first.prisma.auditEntry.createMany({ data: Array.from({ length: 150 }, (_, i) => ({ operation: `recent${i}`, result: 'OK' })) });
    await first.stop();
    const second = await startTestApp({ databaseFile, env: { ...AUTH_ON, ROLLPLANE_AUDIT_RETENTION_DAYS: '7', ROLLPLANE_AUDIT_MAX_ENTRIES: '100' } });
    try {
      const rows = await second.prisma.auditEntry.findMany({ orderBy: { id: 'asc' } });
      expect(rows).toHaveLength(100);
      expect(rows.every((r) => r.createdAt.getTime() > old.getTime())).toBe(true);
      expect(rows.at(-1)!.operation).toBe('recent149');
    } finally {
      await second.stop();
      rmSync(path.dirname(databaseFile), { recursive: true, force: true });
    }
  });
});

describe('a database that cannot be written', () => {
  let dir: string;
  let app: TestApp;
  beforeAll(async () => {
    // A real full disk: a small tmpfs (the tests run as root, as CI does) holding the database.
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', dir]);
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: AUTH_ON });
  });
  afterAll(async () => {
    await app?.stop();
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes /readyz fail, answers mutations UNAVAILABLE rather than 500, and recovers when space is back', async () => {
    const deployer = (await app.domain.tokens.create({ name: 'ci', role: 'deployer' })).secret;
    expect((await fetch(`${app.baseUrl}/readyz`)).status).toBe(200);
    // Fill the disk, then make the WAL checkpoint so that the next writes need new pages.
    try {
      writeFileSync(path.join(dir, 'filler'), Buffer.alloc(64 * 1024 * 1024));
    } catch {
      // ENOSPC once the tmpfs is full: that is the point.
    }
    const ready = await fetch(`${app.baseUrl}/readyz`);
    const body = (await ready.json()) as { checks: { name: string; ok: boolean; error?: string }[] };
    expect(ready.status).toBe(503);
    expect(body.checks.find((c) => c.name === 'database')).toMatchObject({ ok: false });
    // A token's first request of the minute writes lastUsedAt: a hint, it must not fail the request.
    const query = await gql(app.url, '{ serverInfo { version } }', {}, { authorization: `Bearer ${deployer}` });
    expect(query.status).toBe(200);
    const mutation = await gql(app.url, 'mutation { bumpAgentImage(input: { image: "a/agent:v2" }) { created } }', {}, { authorization: `Bearer ${deployer}` });
    expect(mutation.status).toBeLessThan(500);
    expect(mutation.errors?.[0]?.extensions?.code).toMatch(/UNAVAILABLE|BAD_USER_INPUT/);
    rmSync(path.join(dir, 'filler'));
    expect((await fetch(`${app.baseUrl}/readyz`)).status).toBe(200);
  });
});
