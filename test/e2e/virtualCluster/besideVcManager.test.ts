/**
 * Through the GraphQL API, beside the simulated CAPN vc-manager with ClusterVersionPartialUpgrade on (ADR 0018):
 * bumpClusterVersion is refused with CONFLICT naming the Deployment and the flag, and nothing is changed.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

const CV = 'cv-sample-np';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({
    env: {
      ROLLPLANE_SIM_FLEET: 'clusters=2,nodes=2,upstream=vc-manager:partial-upgrade',
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

describe('bumpClusterVersion beside a vc-manager whose gate is on', () => {
  it('is refused with CONFLICT and a message naming the vc-manager Deployment and its flag; nothing is written', async () => {
    const custom = app.kube.kubeConfig.makeApiClient(CustomObjectsApi);
    const read = () => custom.getClusterCustomObject({ group: 'tenancy.x-k8s.io', version: 'v1alpha1', plural: 'clusterversions', name: CV });
    const before = await read();
    // Until the caches have listed, the refusal says the vc-manager has not been read yet: wait for the final one.
    const res: any = await until(
      'a refusal that is not "has not been read yet"',
      async () => {
        const answer = await gql(app.url, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=7'] } } });
        return !/has not been read yet/.test(answer.errors?.[0]?.message ?? '') && answer;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(res.data?.bumpClusterVersion ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(res.errors[0].message).toContain('vc-manager/vc-manager');
    expect(res.errors[0].message).toContain('--feature-gates=ClusterVersionPartialUpgrade=true');
    expect((await read()).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    const rollouts = await gql(app.url, '{ rollouts(first: 5) { totalCount } }');
    expect(rollouts.data.rollouts.totalCount).toBe(0);

    // A dry run is refused the same way; bad input is still named first.
    const dry = await gql(app.url, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=7'] }, dryRun: true } });
    expect(dry.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    const bad = await gql(app.url, BUMP, { input: { clusterVersion: CV, specPatch: { etcd: { statefulset: {} } } } });
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.specPatch.etcd' });
  });
});
