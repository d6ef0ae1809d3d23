/**
 * Beside a CAPN vc-manager scaled to 0 (issue 27): its VirtualCluster webhook stays registered with failurePolicy Fail
 * and no endpoint, so every VirtualCluster write is refused. bumpClusterVersion says so before writing anything; it
 * used to read "replicas 0" as "upgrade it myself" and then fail on every cluster.
 */
import { AppsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

const CV = 'cv-sample-np';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({
    env: {
      ROLLPLANE_SIM_FLEET: 'clusters=2,nodes=2,upstream=vc-manager',
      ROLLPLANE_CONTROLLERS: 'on',
      ROLLPLANE_LEADER_ELECT: 'false',
      ROLLPLANE_KUBE_QPS: '1000',
      ROLLPLANE_KUBE_BURST: '1000',
    },
  });
});
afterAll(async () => {
  await app?.close();
});

const BUMP = `mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { created rollout { id } } }`;

describe('bumpClusterVersion beside a vc-manager scaled to 0 whose webhook is still registered', () => {
  it('is refused with UNAVAILABLE, the webhook message and why; nothing is written', async () => {
    const apps = app.kube.kubeConfig.makeApiClient(AppsV1Api);
    const custom = app.kube.kubeConfig.makeApiClient(CustomObjectsApi);
    await until(
      'the vc-manager webhook registered',
      async () =>
        (await app.kube.kubeConfig.makeApiClient((await import('@kubernetes/client-node')).AdmissionregistrationV1Api).listValidatingWebhookConfiguration())
          .items.length > 0,
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    await apps.patchNamespacedDeployment(
      { name: 'vc-manager', namespace: 'vc-manager', body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const read = () => custom.getClusterCustomObject({ group: 'tenancy.x-k8s.io', version: 'v1alpha1', plural: 'clusterversions', name: CV });
    const before = await read();
    const res: any = await until(
      'refused for want of endpoints',
      async () => {
        const answer = await gql(app.url, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=7'] } } });
        return /no endpoints available/.test(answer.errors?.[0]?.message ?? '') && answer;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(res.errors[0].extensions).toMatchObject({ code: 'UNAVAILABLE', reason: 'PREFLIGHT_REFUSED', vcManager: 'vc-manager/vc-manager' });
    expect(res.errors[0].message).toContain('failed calling webhook "virtualcluster.validating.webhook"');
    expect(res.errors[0].message).toContain('the vc-manager Deployment vc-manager/vc-manager is scaled to 0');
    expect((await read()).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect((await gql(app.url, '{ rollouts(first: 5) { totalCount } }')).data.rollouts.totalCount).toBe(0);
  });
});
