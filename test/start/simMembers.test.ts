import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * The embedded mode's simulated member clusters (ROLLPLANE_SIM_MEMBER_CLUSTERS, docs/adr/0050): the real service in sim
 * mode on port 0 starts `edge-1` and `edge-2` beside `local`, registers them through the credentials file, and their
 * health turns READY; switched off, the same data directory gives `local` alone again.
 */
describe('the embedded mode with simulated member clusters', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane sim members '));
  const databaseFile = path.join(dir, 'rollplane.db');
  const file = path.join(dir, 'member-clusters.yaml');
  const env = { ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '200', ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '50', ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '200' };
  let app: TestApp | undefined;
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const state = (name: string) => app!.memberClusters.connections.get(name)?.health().state;

  it('is on by default with the demo fleet only', () => {
    const read = (env: Record<string, string>) => loadConfig({ ROLLPLANE_KUBE: 'sim', ...env }, [], { fileExists: () => false }).sim.memberClusters;
    expect(read({})).toBe('demo');
    expect(read({ ROLLPLANE_SIM_FLEET: 'empty' })).toBe('off');
    expect(read({ ROLLPLANE_SIM_FLEET: 'empty', ROLLPLANE_SIM_MEMBER_CLUSTERS: 'demo' })).toBe('demo');
    expect(() => read({ ROLLPLANE_SIM_MEMBER_CLUSTERS: 'many' })).toThrow(/ROLLPLANE_SIM_MEMBER_CLUSTERS.*auto, demo or off/);
  });

  it('switched on: local, edge-1 and edge-2 are registered from the credentials file and READY', async () => {
    app = await startTestApp({ databaseFile, env: { ...env, ROLLPLANE_SIM_MEMBER_CLUSTERS: 'demo' } });
    await until('local, edge-1 and edge-2 READY', () => ['local', 'edge-1', 'edge-2'].every((name) => state(name) === 'READY'));
    expect(app.memberClusters.connections.get('edge-1')!.health().kinds).toContain('AGENT_POOL');
    expect((await app.memberClusters.registry.list()).map((c) => [c.name, c.source, c.labels])).toEqual([
      ['edge-1', 'FILE', { region: 'eu-west', tier: 'edge' }],
      ['edge-2', 'FILE', { region: 'us-east', tier: 'edge' }],
      ['local', 'LOCAL', {}],
    ]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const written = parse(readFileSync(file, 'utf8')) as { clusters: { name: string; managedBy: string; kubeconfig: string }[] };
    expect(written.clusters.map((c) => [c.name, c.managedBy])).toEqual([
      ['edge-1', 'rollplane-sim'],
      ['edge-2', 'rollplane-sim'],
    ]);
    expect(readFileSync(file, 'utf8')).toContain('# rollplane member clusters'); // the template's comments stay
    await app.close();
    app = undefined;
  });

  it('switched off: local alone, and the simulated entries leave the file', async () => {
    app = await startTestApp({ databaseFile, env: { ...env, ROLLPLANE_SIM_MEMBER_CLUSTERS: 'off' } });
    await until('local READY', () => state('local') === 'READY');
    await until('edge-1 and edge-2 deregistered', async () => (await app!.memberClusters.registry.list()).map((c) => c.name).join() === 'local');
    expect([...app.memberClusters.connections.snapshots()].map((s) => s.name)).toEqual(['local']);
    expect((parse(readFileSync(file, 'utf8')) as { clusters: unknown[] }).clusters).toEqual([]);
  });
});
