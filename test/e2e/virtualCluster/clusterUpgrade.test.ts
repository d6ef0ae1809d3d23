import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPGRADE_SECONDS_BUCKETS } from '../../../src/kinds/virtualCluster/controller/index.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

const CV = 'cv-sample-np';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({
    env: {
      ROLLPLANE_SIM_FLEET: 'clusters=3,nodes=2',
      ROLLPLANE_KUBE_QPS: '1000',
      ROLLPLANE_KUBE_BURST: '1000',
      ROLLPLANE_CONTROLLERS: 'on',
      ROLLPLANE_LEADER_ELECT: 'false',
    },
  });
});
afterAll(async () => {
  await app?.close();
});

const CLUSTERS = `query($filter: VirtualClusterFilter) { virtualClusters(filter: $filter, first: 10) { totalCount edges { node {
  namespace name clusterVersionName phase reason message appliedResourceVersion appliedSpecVersion upToDate readyForUpgrade upgrading
  lastUpgrade { clusterVersion resourceVersion outcome seconds components { component seconds } error }
} } } }`;
const BUMP = `mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) {
  created dryRun rollout { id state fromVersion toVersion strategy { maxConcurrent failureThreshold progressDeadlineSeconds } }
  plan { namespace name fromVersion toVersion action reason }
} }`;
const ROLLOUT = `query($id: ID!) { rollout(id: $id) { state message targets(first: 10) { edges { node { name state error admittedAt finishedAt } } } } }`;

async function waitForRollout(id: string, timeoutMs = 45_000): Promise<any> {
  let state: string | undefined;
  return until(
    () => `rollout ${id} to end (still ${state})`,
    async () => {
      const rollout = (await gql(app.url, ROLLOUT, { id })).data?.rollout;
      state = rollout?.state;
      return rollout && ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'].includes(rollout.state) && rollout;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

function parseMetrics(text: string, name: string): { labels: string; value: number }[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => {
      const at = line.lastIndexOf(' ');
      return { labels: line.slice(name.length, at), value: Number(line.slice(at + 1)) };
    });
}

describe('bumpClusterVersion through the GraphQL API', () => {
  it('lists the clusters and the version they use', async () => {
    const res = await gql(app.url, CLUSTERS, {});
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    expect(res.data.virtualClusters.totalCount).toBe(3);
    expect(res.data.virtualClusters.edges.map((e: any) => e.node.name)).toEqual(['vc-1', 'vc-2', 'vc-3']);
    const versions = await gql(
      app.url,
      `{ clusterVersions(first: 10) { totalCount edges { node { name specVersion apiServerImage etcdImage clusterCount behindCount } } } }`,
    );
    expect(versions.data.clusterVersions.edges[0].node).toMatchObject({
      name: CV,
      clusterCount: 3,
      behindCount: 0,
      apiServerImage: 'virtualcluster/apiserver-v1.16.2',
    });
  });

  it('refuses bad input with BAD_USER_INPUT naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ clusterVersion: CV, specPatch: { etcd: { statefulset: {} } } }, 'input.specPatch.etcd'],
      [{ clusterVersion: CV, specPatch: { scheduler: {} } }, 'input.specPatch.scheduler'],
      [{ clusterVersion: CV, apiServer: { image: 'Not An Image' } }, 'input.apiServer.image'],
      [{ clusterVersion: CV, specPatch: { apiServer: { service: { apiVersion: null, kind: null } } } }, 'input.specPatch.apiServer.service'],
      [{ clusterVersion: CV, apiServer: { args: ['-v=7'] }, clusters: ['default/nope'] }, 'input.clusters[0]'],
      [{ clusterVersion: 'missing', apiServer: { args: ['-v=7'] } }, 'input.clusterVersion'],
      [{ clusterVersion: CV, apiServer: { args: ['-v=7'] }, maxConcurrent: 0 }, 'input.maxConcurrent'],
    ];
    for (const [input, field] of cases) {
      const res = await gql(app.url, BUMP, { input });
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toContain(field);
    }
    const etcd = await gql(app.url, BUMP, { input: { clusterVersion: CV, specPatch: { etcd: {} } } });
    expect(etcd.errors?.[0]?.message).toMatch(/etcd changes are refused/);
  });

  it('upgrades every cluster with -v=7 and a Service label, never more than maxConcurrent at once, with one observation each on the subscription and /metrics', async () => {
    const ws = wsClient(app.url);
    const open = async () => (await app.metrics.subscriptionsActive.get()).values[0]?.value ?? 0;
    const openBefore = await open();
    const feed = collect(
      ws,
      `subscription { clusterUpgradeObserved(filter: { clusterVersion: "${CV}" }) { clusterName clusterVersion resourceVersion outcome seconds components { component } rolloutId } }`,
    );
    // The subscription is open on the server (its gauge counts it) before the bump.
    await until('the subscription to be open', async () => (await open()) > openBefore);
    const input = {
      clusterVersion: CV,
      apiServer: { args: ['-v=7'] },
      controllerManager: { args: ['-v=7'] },
      specPatch: { apiServer: { service: { metadata: { labels: { 'rollplane.io/e2e': 'upgraded' } } } } },
      maxConcurrent: 2,
      cause: { actor: 'ci', commit: 'abc123' },
      idempotencyKey: 'vc-e2e-1',
    };
    const dry = await gql(app.url, BUMP, { input: { ...input, idempotencyKey: null, dryRun: true } });
    expect(dry.errors).toBeUndefined();
    expect(dry.data.bumpClusterVersion).toMatchObject({ dryRun: true, created: false });
    expect(dry.data.bumpClusterVersion.plan.map((p: any) => p.action)).toEqual(['change', 'change', 'change']);

    const res = await gql(app.url, BUMP, { input });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const bump = res.data.bumpClusterVersion;
    expect(bump.created).toBe(true);
    expect(bump.rollout.toVersion).toMatch(/^spec-[0-9a-f]{12}$/);
    expect(bump.rollout.strategy).toMatchObject({ maxConcurrent: 2, failureThreshold: 1, progressDeadlineSeconds: 600 });
    const again = await gql(app.url, BUMP, { input });
    expect(again.data.bumpClusterVersion).toMatchObject({ created: false, rollout: { id: bump.rollout.id } });

    const rollout = await waitForRollout(bump.rollout.id);
    expect(rollout.state).toBe('SUCCEEDED');
    // Each observation (metrics, then the event) follows the cluster's status write that the rollout reads.
    await feed.waitFor(3);
    // maxConcurrent: at no instant were more than 2 targets between admission and finish.
    const spans = rollout.targets.edges.map((e: any) => [Date.parse(e.node.admittedAt), Date.parse(e.node.finishedAt)]);
    for (const [start] of spans) expect(spans.filter(([s, f]: number[]) => s! <= start! && start! < f!).length).toBeLessThanOrEqual(2);

    const clusters = (await gql(app.url, CLUSTERS, { filter: { clusterVersionName: CV } })).data.virtualClusters.edges.map((e: any) => e.node);
    const cv = (await gql(app.url, `{ clusterVersion(name: "${CV}") { resourceVersion specVersion behindCount spec } }`)).data.clusterVersion;
    expect(cv.specVersion).toBe(bump.rollout.toVersion);
    expect(cv.behindCount).toBe(0);
    expect(cv.spec.apiServer.statefulset.spec.template.spec.containers[0].args).toEqual(['-v=7']);
    expect(cv.spec.controllerManager.statefulset.spec.template.spec.containers[0].args).toEqual(['-v=7']);
    // Live in every cluster's control plane (read with client-node from the API rollplane drives).
    const apps = app.kube.kubeConfig.makeApiClient(AppsV1Api);
    const core = app.kube.kubeConfig.makeApiClient(CoreV1Api);
    const namespaces = (await gql(app.url, `{ virtualClusters(first: 10) { edges { node { name clusterNamespace } } } }`)).data.virtualClusters.edges.map(
      (e: any) => e.node.clusterNamespace,
    );
    for (const namespace of namespaces) {
      for (const name of ['apiserver', 'controller-manager']) {
        const sts = await apps.readNamespacedStatefulSet({ namespace, name });
        expect(sts.spec?.template.spec?.containers[0]?.args).toEqual(['-v=7']);
        expect(sts.status?.currentRevision).toBe(sts.status?.updateRevision);
      }
      expect((await core.readNamespacedService({ namespace, name: 'apiserver-svc' })).metadata?.labels).toMatchObject({ 'rollplane.io/e2e': 'upgraded' });
    }
    for (const vc of clusters) {
      expect(vc).toMatchObject({
        reason: 'TenantControlPlaneUpgradeCompleted',
        phase: 'Running',
        appliedResourceVersion: cv.resourceVersion,
        appliedSpecVersion: cv.specVersion,
        upToDate: true,
        readyForUpgrade: false,
        upgrading: false,
      });
      expect(vc.lastUpgrade).toMatchObject({ outcome: 'SUCCEEDED', resourceVersion: cv.resourceVersion, clusterVersion: CV, error: null });
    }

    expect(feed.results).toHaveLength(3);
    const observed = feed.results.map((r: any) => r.clusterUpgradeObserved);
    expect(observed.map((o: any) => o.clusterName).sort()).toEqual(['vc-1', 'vc-2', 'vc-3']);
    for (const o of observed) expect(o).toMatchObject({ outcome: 'SUCCEEDED', resourceVersion: cv.resourceVersion, rolloutId: bump.rollout.id });
    feed.unsubscribe();
    await ws.dispose();

    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    const labels = `{cluster_version="${CV}",resource_version="${cv.resourceVersion}"}`;
    expect(parseMetrics(metrics, 'clusters_upgraded')).toEqual([{ labels, value: 3 }]);
    expect(parseMetrics(metrics, 'clusters_upgrade_failed')).toEqual([]);
    expect(parseMetrics(metrics, 'clusters_upgrade_seconds_count')).toEqual([{ labels, value: 3 }]);
    const sum = parseMetrics(metrics, 'clusters_upgrade_seconds_sum')[0]!.value;
    expect(sum).toBeCloseTo(
      observed.reduce((total: number, o: any) => total + o.seconds, 0),
      2,
    );
    const buckets = parseMetrics(metrics, 'clusters_upgrade_seconds_bucket');
    expect(buckets.map((b) => /le="([^"]+)"/.exec(b.labels)![1])).toEqual([...UPGRADE_SECONDS_BUCKETS.map(String), '+Inf']);
    for (const [i, bound] of UPGRADE_SECONDS_BUCKETS.entries()) {
      expect(buckets[i]!.value).toBe(observed.filter((o: any) => o.seconds <= bound).length);
    }
    expect(buckets[buckets.length - 1]!.value).toBe(3);

    const durations = await gql(
      app.url,
      `{ clusterUpgradeDurations(clusterVersion: "${CV}") { clusterVersion count failed p50Seconds p95Seconds maxSeconds } }`,
    );
    const sorted = observed.map((o: any) => o.seconds).sort((a: number, b: number) => a - b);
    expect(durations.data.clusterUpgradeDurations).toEqual([
      { clusterVersion: CV, count: 3, failed: 0, p50Seconds: sorted[1], p95Seconds: sorted[2], maxSeconds: sorted[2] },
    ]);
  });

  it('rolls back by re-applying the previous ClusterVersion spec', async () => {
    const before = (await gql(app.url, `{ clusterVersion(name: "${CV}") { specVersion } }`)).data.clusterVersion.specVersion;
    const bump = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { env: [{ name: 'GODEBUG', value: 'x509sha1=1' }] }, clusters: ['default/vc-1'] },
    });
    expect(bump.errors, JSON.stringify(bump.errors)).toBeUndefined();
    const id = bump.data.bumpClusterVersion.rollout.id;
    expect((await waitForRollout(id)).state).toBe('SUCCEEDED');
    // Only vc-1 was chosen: the others are now behind the changed ClusterVersion.
    const behind = await gql(
      app.url,
      `{ virtualClusters(first: 10, filter: { behind: true }) { edges { node { name upToDate } } }
      clusterVersion(name: "${CV}") { behindCount } drift(kind: VIRTUAL_CLUSTER, first: 10) { totalCount edges { node { name desiredVersion runningVersion } } } }`,
    );
    expect(behind.errors, JSON.stringify(behind.errors)).toBeUndefined();
    expect(behind.data.virtualClusters.edges.map((e: any) => e.node.name)).toEqual(['vc-2', 'vc-3']);
    expect(behind.data.clusterVersion.behindCount).toBe(2);
    expect(behind.data.drift.edges.map((e: any) => e.node.name).sort()).toEqual(['vc-2', 'vc-3']);
    const back = await gql(app.url, `mutation($id: ID!) { rollbackRollout(id: $id) { id toVersion } }`, { id });
    expect(back.errors, JSON.stringify(back.errors)).toBeUndefined();
    expect(back.data.rollbackRollout.toVersion).toBe(before);
    expect((await waitForRollout(back.data.rollbackRollout.id)).state).toBe('SUCCEEDED');
    const cv = (await gql(app.url, `{ clusterVersion(name: "${CV}") { specVersion spec } }`)).data.clusterVersion;
    expect(cv.specVersion).toBe(before);
    expect(cv.spec.apiServer.statefulset.spec.template.spec.containers[0].env ?? []).toEqual([]);
    const vc1 = (
      await gql(app.url, `{ virtualCluster(namespace: "default", name: "vc-1") { appliedSpecVersion upToDate history(first: 3) { edges { node { type } } } } }`)
    ).data.virtualCluster;
    expect(vc1).toMatchObject({ appliedSpecVersion: before, upToDate: true });
    expect(vc1.history.edges.length).toBeGreaterThan(0);
    expect((await gql(app.url, `{ rollout(id: "${id}") { state } }`)).data.rollout.state).toBe('ROLLED_BACK');
  });

  it('refuses a second active change of the same ClusterVersion, even for other clusters (CONFLICT)', async () => {
    const first = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { args: ['-v=2'] }, clusters: ['default/vc-2'], idempotencyKey: 'conflict-1' },
    });
    expect(first.errors, JSON.stringify(first.errors)).toBeUndefined();
    const id = first.data.bumpClusterVersion.rollout.id;
    await gql(app.url, `mutation($id: ID!) { pauseRollout(id: $id) { state } }`, { id });
    const second = await gql(app.url, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=3'] }, clusters: ['default/vc-3'] } });
    expect(second.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(second.errors?.[0]?.message).toContain(id);
    // A retry of the first request with its idempotency key still returns it.
    const retry = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { args: ['-v=2'] }, clusters: ['default/vc-2'], idempotencyKey: 'conflict-1' },
    });
    expect(retry.data?.bumpClusterVersion).toMatchObject({ created: false, rollout: { id } });
    await gql(app.url, `mutation($id: ID!) { abortRollout(id: $id) { state } }`, { id });
  });
});
