import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import type { VirtualClusterOptions } from '../../../src/kinds/virtualCluster/controller/index.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

const CV = 'cv-sample-np';
let app: App;
let dir: string;

/**
 * The real service with short upgrade timeouts. The vcluster settings ride on the config object under
 * `virtualClusters` (where setupRolloutKinds reads them) until config.ts has them as settings.
 */
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-vc-bad-'));
  const config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
      LOG_LEVEL: 'silent',
      ROLLPLANE_KUBE: 'sim',
      ROLLPLANE_SIM_FLEET: 'clusters=2,nodes=2',
      ROLLPLANE_CONTROLLERS: 'on',
      ROLLPLANE_LEADER_ELECT: 'false',
      ROLLPLANE_KUBE_QPS: '1000',
      ROLLPLANE_KUBE_BURST: '1000',
    },
    [],
  );
  const virtualClusters: VirtualClusterOptions = { readyTimeoutMs: 4000, pollIntervalMs: 100 };
  app = await startApp({ ...config, virtualClusters } as typeof config, { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
});
afterAll(async () => {
  await app?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const BUMP = `mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id toVersion } } }`;
const CLUSTER = `{ virtualCluster(namespace: "default", name: "vc-1") { reason message appliedResourceVersion upToDate readyForUpgrade lastUpgrade { outcome error resourceVersion } } }`;

async function finished(id: string): Promise<any> {
  let state: string | undefined;
  return until(
    () => `rollout ${id} to end (still ${state})`,
    async () => {
      const rollout = (
        await gql(app.url, `query($id: ID!) { rollout(id: $id) { state message targets(first: 5) { edges { node { name state error } } } } }`, { id })
      ).data?.rollout;
      state = rollout?.state;
      return rollout && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(rollout.state) && rollout;
    },
    { timeoutMs: 40_000, intervalMs: 100 },
  );
}

/** vc-1 once its last observation has the outcome (the event follows the status write the rollout reads). */
async function observedAs(outcome: string): Promise<any> {
  let vc: any;
  return until(
    () => `a ${outcome} observation of vc-1 (have ${JSON.stringify(vc)})`,
    async () => {
      vc = (await gql(app.url, CLUSTER)).data.virtualCluster;
      return vc.lastUpgrade?.outcome === outcome && vc;
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );
}

function metric(text: string, name: string, resourceVersion: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{cluster_version="${CV}",resource_version="${resourceVersion}"}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a bad control-plane image', () => {
  it('fails the upgrade on the ready timeout without marking the cluster, and a later fixed version succeeds', async () => {
    const before = (await gql(app.url, CLUSTER)).data.virtualCluster.appliedResourceVersion;
    const bad = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { image: 'virtualcluster/apiserver-v1.16.2:bad-build' }, clusters: ['default/vc-1'] },
    });
    expect(bad.errors, JSON.stringify(bad.errors)).toBeUndefined();
    const failed = await finished(bad.data.bumpClusterVersion.rollout.id);
    expect(failed.state).toBe('FAILED');
    expect(failed.targets.edges[0].node).toMatchObject({ name: 'vc-1', state: 'FAILED' });
    expect(failed.targets.edges[0].node.error).toMatch(/^fail to upgrade: timed out after 4s waiting for StatefulSet .*\/apiserver to roll/);

    const vc = await observedAs('FAILED');
    expect(vc).toMatchObject({ reason: 'TenantControlPlaneUpgradeFailed', appliedResourceVersion: before, upToDate: false, readyForUpgrade: false });
    expect(vc.lastUpgrade.outcome).toBe('FAILED');
    const badRv = vc.lastUpgrade.resourceVersion;
    let text = await (await fetch(app.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(metric(text, 'clusters_upgrade_failed', badRv)).toBe(1);
    expect(metric(text, 'clusters_upgrade_seconds_count', badRv)).toBe(1);
    expect(metric(text, 'clusters_upgrade_seconds_sum', badRv)).toBeGreaterThanOrEqual(4);
    expect(metric(text, 'clusters_upgraded', badRv)).toBeUndefined();

    const fixed = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { image: 'virtualcluster/apiserver-v1.16.3' }, clusters: ['default/vc-1'] },
    });
    expect(fixed.errors, JSON.stringify(fixed.errors)).toBeUndefined();
    expect((await finished(fixed.data.bumpClusterVersion.rollout.id)).state).toBe('SUCCEEDED');
    const after = await observedAs('SUCCEEDED');
    expect(after).toMatchObject({ reason: 'TenantControlPlaneUpgradeCompleted', upToDate: true, lastUpgrade: { outcome: 'SUCCEEDED' } });
    text = await (await fetch(app.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(metric(text, 'clusters_upgraded', after.appliedResourceVersion)).toBe(1);
    expect(metric(text, 'clusters_upgrade_failed', badRv)).toBe(1);
  });
});
