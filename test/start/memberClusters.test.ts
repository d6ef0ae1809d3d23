import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { openSqliteDatabase } from '../../src/store/db.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * The service with member clusters (src/start/memberClusters.ts): `local` registered at every start (once), a member
 * from the embedded mode's credentials file connected with its own health, and /readyz unmoved by a member that is down.
 */
describe('the service with member clusters', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member app '));
  const databaseFile = path.join(dir, 'rollplane.db');
  const file = path.join(dir, 'member-clusters.yaml');
  const env = {
    ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '200',
    ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '50',
    ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS: '400',
    ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: '3000',
  };
  let member: SimulatedClusters;
  let app: TestApp | undefined;

  beforeAll(async () => {
    // Without the project CRDs: edge-a serves node agents alone.
    member = await startSimulatedClusters({ clusters: [{ name: 'edge-a', behaviour: false, crds: false }] });
    const kubeconfig = member.clusters.get('edge-a')!.kubeconfig;
    writeFileSync(file, stringify({ clusters: [{ name: 'edge-a', labels: { env: 'prod' }, kubeconfig }] }), { mode: 0o600 });
  });
  afterAll(async () => {
    await app?.close();
    await member?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const state = (name: string) => app!.memberClusters.connections.get(name)?.health().state;
  const readyz = async () => (await fetch(`${app!.baseUrl}/readyz`)).status;

  it('registers local and the file member, connects both, and stays ready while the member is down', async () => {
    app = await startTestApp({ databaseFile, env });
    await until('local and edge-a READY', () => state('local') === 'READY' && state('edge-a') === 'READY');
    expect(app.memberClusters.connections.get('edge-a')?.health().kinds).toEqual(['NODE_AGENT']);
    expect((await app.memberClusters.registry.list()).map((c) => [c.name, c.source, c.labels])).toEqual([
      ['edge-a', 'FILE', { env: 'prod' }],
      ['local', 'LOCAL', {}],
    ]);
    expect(await readyz()).toBe(200);

    await member.set('edge-a', 'blackhole');
    await until('edge-a UNREACHABLE', () => state('edge-a') === 'UNREACHABLE');
    expect(await readyz()).toBe(200);
    expect(state('local')).not.toBe('UNREACHABLE');
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toContain('rollplane_cluster_up{cluster="edge-a"} 0');
    expect(metrics).toContain('rollplane_cluster_health{cluster="edge-a",state="UNREACHABLE"} 1');
    await until('the store says edge-a is UNREACHABLE', async () => (await app!.memberClusters.registry.find('edge-a'))?.health.state === 'UNREACHABLE');
    await member.set('edge-a', 'ready');
    await app.close();
    app = undefined;
  });

  it('registers local once however often it starts, and creates no credentials file over an existing one', async () => {
    const db = await openSqliteDatabase(`file:${databaseFile}`);
    const local = await db.memberClusters.find('local');
    await db.close();
    app = await startTestApp({ databaseFile, env });
    const rows = await app.memberClusters.registry.list();
    expect(rows.filter((c) => c.name === 'local')).toHaveLength(1);
    expect(rows.find((c) => c.name === 'local')?.createdAt).toEqual(local?.createdAt);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await until('edge-a READY again', () => state('edge-a') === 'READY');
  });
});

describe('the credentials file of a fresh service', () => {
  it('is created 0600 beside the SQLite database', async () => {
    const app = await startTestApp();
    try {
      expect(statSync(path.join(path.dirname(app.databaseFile), 'member-clusters.yaml')).mode & 0o777).toBe(0o600);
    } finally {
      await app.close();
    }
  });
});
