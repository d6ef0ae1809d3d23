import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';
import { DELAYS, DS, NODES, NS, OLD } from './nodeAgent/caaFleet.js';

/**
 * Analysis between the targets of NODE_AGENT and VIRTUAL_CLUSTER rollouts (issue 33, ADR 0071 addendum), through the
 * real server driving a simulator over HTTP, with Debian's Prometheus scraping the simulator's per-kind metrics: peer
 * pods started per node, API server request errors per virtual cluster. A `degraded*` image stays Ready — the rollout
 * alone would succeed — but starts no peer pods / fails half its API requests: the analysis after the first target
 * fails the rollout there and the other targets are never touched; a healthy image passes. Neither kind rolls itself
 * back (their strategies have no autoRollback): a failed one stays FAILED with the step's reason until rolled back.
 */
const CV = 'cv-sample-np';
const CLUSTERS = ['vc-1', 'vc-2', 'vc-3'];
const CAA = 'quay.io/confidential-containers/cloud-api-adaptor';
const APISERVER = 'virtualcluster/apiserver-v1.16.2';

const template = (name: string, metric: Record<string, unknown>) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'AnalysisTemplate',
  metadata: { name },
  spec: {
    args: [{ name: 'version' }, { name: 'name' }, { name: 'target' }],
    metrics: [{ initialDelay: '4s', interval: '2s', count: 2, noData: 'WAIT(30s)', ...metric }],
  },
});
/** The step's nodes, on the rollout's version, started peer pods. */
const PEER_STARTS = template('peer-pod-starts', {
  name: 'peer-pod-starts',
  successCondition: 'result[0] > 0',
  provider: { prometheus: { query: 'sum(rate(sim_peer_pod_starts_total{job="sim",node=~"{{args.name}}",version="{{args.version}}"}[10s]))' } },
});
/**
 * The step's virtual clusters answer at most 10 % of their API requests with errors. A VIRTUAL_CLUSTER rollout's
 * version is its ClusterVersion spec's (`spec-…`), not the API server's tag, so the clusters are told apart by
 * `target`; the window is shorter than the initial delay, so the replaced API server's series is out of it.
 */
const APISERVER_ERRORS = template('apiserver-errors', {
  name: 'apiserver-errors',
  initialDelay: '5s',
  failureCondition: 'result[0] > 0.1',
  provider: {
    prometheus: {
      query:
        'sum(rate(sim_apiserver_request_errors_total{job="sim",virtual_cluster=~"{{args.target}}"}[3s])) / sum(rate(sim_apiserver_requests_total{job="sim",virtual_cluster=~"{{args.target}}"}[3s]))',
    },
  },
});
/** A template that fails the small PromQL check at submit. */
const broken = (t: typeof PEER_STARTS) => {
  const copy = structuredClone(t);
  const { provider } = copy.spec.metrics[0] as unknown as { provider: { prometheus: { query: string } } };
  provider.prometheus.query = provider.prometheus.query.replace('sum(rate', 'sum(rate(');
  return copy;
};

const ROLLOUT = `query ($id: ID!) { rollout(id: $id) {
  state message waitingFor
  strategy { analysis { after config } }
  gates { key type state }
  gate(key: "targets:1") { analysisRuns { phase args measurements { metric verdict query values } } }
  targets { edges { node { name state } } }
} }`;
const STATE = 'query ($id: ID!) { rollout(id: $id) { state message waitingFor } }';
const COUNT = '{ rollouts { totalCount } }';

describeWithPrometheus('analysis between the targets of node-agent and virtual-cluster rollouts, against a real Prometheus', () => {
  let sim: Simulator;
  let prometheus: TestPrometheus;
  let app: TestApp;

  beforeAll(async () => {
    sim = await startSimulator({ delays: DELAYS, fleet: `clusters=${CLUSTERS.length},nodes=${NODES.length}` });
    prometheus = await startTestPrometheus([{ url: sim.url, job: 'sim' }], 1000);
    app = await startTestApp({
      env: {
        ROLLPLANE_KUBE: 'kubeconfig',
        KUBECONFIG: sim.kubeconfigPath,
        ROLLPLANE_CONTROLLERS: 'on',
        ROLLPLANE_LEADER_ELECT: 'false',
        ROLLPLANE_PROMETHEUS_URL: prometheus.url,
      },
    });
    await prometheus.waitForSeries('sim_peer_pod_starts_total{job="sim"}', { min: NODES.length });
    await prometheus.waitForSeries('sim_apiserver_requests_total{job="sim"}', { min: CLUSTERS.length });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await prometheus?.stop();
    await sim?.stop();
  });

  // Polls read only this (the whole ROLLOUT, read once at the end, costs enough to be rate-limited when polled).
  const state = async (id: string) => {
    const result = await gql(app.url, STATE, { id });
    expect(result.errors).toBeUndefined();
    return result.data.rollout as { state: string; message: string | null; waitingFor: string | null };
  };
  const ended = async (id: string) => {
    await until(`rollout ${id} ended`, async () => ['SUCCEEDED', 'FAILED', 'PAUSED', 'ROLLED_BACK', 'ABORTED'].includes((await state(id)).state), {
      timeoutMs: 120_000,
    });
    const result = await gql(app.url, ROLLOUT, { id });
    expect(result.errors).toBeUndefined();
    return result.data.rollout;
  };
  /** Polls `Rollout.waitingFor` until it says the step measures, while the rollout is at it. */
  const measuring = (id: string) =>
    until(`rollout ${id} saying it measures`, async () => {
      const r = await state(id);
      if (r.state !== 'PROGRESSING' && r.state !== 'PENDING')
        throw new Error(`rollout ${id} ended ${r.state} (${r.message}) before waitingFor said it measured`);
      return r.waitingFor?.startsWith('analysis targets:1: ') ? (r.waitingFor as string) : undefined;
    });
  const rollBack = async (id: string) => {
    const result = await gql(app.url, 'mutation ($id: ID!) { rollbackRollout(id: $id) { id strategy { analysis { after } } } }', { id });
    expect(result.errors).toBeUndefined();
    expect(result.data.rollbackRollout.strategy.analysis).toBeNull();
    return result.data.rollbackRollout.id as string;
  };
  const count = async () => (await gql(app.url, COUNT)).data.rollouts.totalCount as number;
  const targetStates = (r: { targets: { edges: { node: { name: string; state: string } }[] } }) =>
    Object.fromEntries(r.targets.edges.map((e) => [e.node.name, e.node.state]));

  describe('NODE_AGENT', () => {
    const BUMP = 'mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id } } }';
    const images = () =>
      sim.store
        .list(sim.store.resourceType('', 'pods')!)
        .filter((p) => p.metadata.namespace === NS && !p.metadata.deletionTimestamp)
        .map((p) => `${p.spec.nodeName}=${p.spec.containers[0].image}`)
        .sort();
    const bump = async (image: string, template: unknown) => {
      const result = await gql(app.url, BUMP, { input: { namespace: NS, name: DS, image, analysis: { after: [1], config: { template } } } });
      expect(result.errors).toBeUndefined();
      return result.data.bumpNodeAgentImage.rollout.id as string;
    };

    it('refuses a bad analysis with BAD_USER_INPUT naming the field, and changes nothing', async () => {
      const before = { rollouts: await count(), images: images() };
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ after: [1], config: { template: broken(PEER_STARTS) } }, /^input\.analysis\.config\.template\.spec\.metrics\[0\]\.provider\.prometheus\.query: /],
        [{ config: { template: PEER_STARTS } }, /^input\.analysis: needs `every` or `after`/],
        [{ after: [2, 1], config: { template: PEER_STARTS } }, /^input\.analysis\.after: must be in increasing order/],
      ];
      for (const [analysis, message] of refusals) {
        const refused = await gql(app.url, BUMP, { input: { namespace: NS, name: DS, image: `${CAA}:v0.11.0`, analysis } });
        expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(refused.errors?.[0]?.message).toMatch(message);
      }
      expect({ rollouts: await count(), images: images() }).toEqual(before);
    });

    it('fails a rollout of a Ready image that starts no peer pods at the analysis after the first node; a healthy one passes', async () => {
      expect(new Set(images().map((i) => i.split('=')[1]))).toEqual(new Set([OLD]));
      const DEGRADED = `${CAA}:degraded-v0.11.0`;
      const bad = await bump(DEGRADED, PEER_STARTS);
      expect(await measuring(bad)).toMatch(/^analysis targets:1: measuring, [0-2] of 2 measurements/);
      const failed = await ended(bad);
      expect(failed.state).toBe('FAILED');
      expect(failed.message).toMatch(/^analysis targets:1: analysis .* failed/);
      expect(failed.waitingFor).toBeNull();
      expect(failed.strategy.analysis).toMatchObject({ after: [1] });
      expect(failed.gates).toEqual([{ key: 'targets:1', type: 'ANALYSIS', state: 'FAILED' }]);
      const [run] = failed.gate.analysisRuns;
      expect(run).toMatchObject({ phase: 'FAILED', args: { version: 'degraded-v0.11.0', name: NODES[0], target: NODES[0] } });
      expect(run.measurements.at(-1)).toMatchObject({ verdict: 'FAILED', values: [0] });
      expect(run.measurements.at(-1).query).toContain(`node=~"${NODES[0]}",version="degraded-v0.11.0"`);
      // The first node got the image; the analysis stopped the others (the failed rollout cancelled them).
      expect(targetStates(failed)).toEqual({ [NODES[0]!]: 'SUCCEEDED', [NODES[1]!]: 'CANCELLED', [NODES[2]!]: 'CANCELLED' });
      expect(images()).toEqual([`${NODES[0]}=${DEGRADED}`, `${NODES[1]}=${OLD}`, `${NODES[2]}=${OLD}`]);
      // The kind does not roll itself back; a rollback puts the node back (its strategy drops the analysis).
      expect((await ended(await rollBack(bad))).state).toBe('SUCCEEDED');
      expect(images()).toEqual(NODES.map((node) => `${node}=${OLD}`));

      const HEALTHY = `${CAA}:v0.11.0`;
      const good = await bump(HEALTHY, PEER_STARTS);
      expect(await measuring(good)).toMatch(/^analysis targets:1: measuring, [0-2] of 2 measurements/);
      const passed = await ended(good);
      expect(passed.state).toBe('SUCCEEDED');
      expect(passed.gates).toEqual([{ key: 'targets:1', type: 'ANALYSIS', state: 'PASSED' }]);
      expect(passed.gate.analysisRuns[0].measurements.every((m: { verdict: string }) => m.verdict === 'SUCCESSFUL' || m.verdict === 'WAITING')).toBe(true);
      expect(images()).toEqual(NODES.map((node) => `${node}=${HEALTHY}`));
    });
  });

  describe('VIRTUAL_CLUSTER', () => {
    const BUMP = 'mutation ($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id } } }';
    const apiServerImages = () =>
      sim.store
        .list(sim.store.resourceType('', 'pods')!)
        .filter((p) => p.metadata.labels?.['component-name'] === 'apiserver' && !p.metadata.deletionTimestamp)
        .map((p) => `${p.metadata.namespace!.replace(/^default-[0-9a-f]+-/, '')}=${p.spec.containers[0].image}`)
        .sort();
    const versionImage = async () => (await gql(app.url, '{ clusterVersions { edges { node { name apiServerImage } } } }')).data.clusterVersions.edges;
    const bump = async (image: string, template: unknown) => {
      const result = await gql(app.url, BUMP, { input: { clusterVersion: CV, apiServer: { image }, analysis: { after: [1], config: { template } } } });
      expect(result.errors).toBeUndefined();
      return result.data.bumpClusterVersion.rollout.id as string;
    };

    it('refuses a bad analysis with BAD_USER_INPUT naming the field, and changes nothing', async () => {
      const before = { rollouts: await count(), version: await versionImage(), images: apiServerImages() };
      const input = (analysis: unknown, more: Record<string, unknown> = {}) => ({
        input: { clusterVersion: CV, apiServer: { image: `${APISERVER}:v1.16.3` }, analysis, ...more },
      });
      const refusals: [ReturnType<typeof input>, RegExp][] = [
        [
          input({ after: [1], config: { template: broken(APISERVER_ERRORS) } }),
          /^input\.analysis\.config\.template\.spec\.metrics\[0\]\.provider\.prometheus\.query: /,
        ],
        [input({ every: 0, config: { template: APISERVER_ERRORS } }), /^input\.analysis\.every: must be at least 1/],
        [input({ after: [1], config: { templateName: 'no-such-template' } }), /^input\.analysis\.config\.templateName: /],
        [
          input({ after: [1], config: { template: APISERVER_ERRORS } }, { waveStrategy: { waves: [{ name: 'all', clusters: { names: ['local'] } }] } }),
          /^input\.analysis: is for a rollout without waves/,
        ],
      ];
      for (const [variables, message] of refusals) {
        const refused = await gql(app.url, BUMP, variables);
        expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(refused.errors?.[0]?.message).toMatch(message);
      }
      expect({ rollouts: await count(), version: await versionImage(), images: apiServerImages() }).toEqual(before);
    });

    it('fails a rollout of a Ready API server that errs on half its requests at the analysis after the first cluster; a healthy one passes', async () => {
      const DEGRADED = `${APISERVER}:degraded-1`;
      const bad = await bump(DEGRADED, APISERVER_ERRORS);
      expect(await measuring(bad)).toMatch(/^analysis targets:1: measuring, [0-2] of 2 measurements/);
      const failed = await ended(bad);
      expect(failed.state).toBe('FAILED');
      expect(failed.message).toMatch(/^analysis targets:1: analysis .* failed/);
      expect(failed.strategy.analysis).toMatchObject({ after: [1] });
      expect(failed.gates).toEqual([{ key: 'targets:1', type: 'ANALYSIS', state: 'FAILED' }]);
      const [run] = failed.gate.analysisRuns;
      expect(run).toMatchObject({ phase: 'FAILED', args: { target: 'default/vc-1', name: 'vc-1' } });
      expect(run.measurements.at(-1).query).toContain('virtual_cluster=~"default/vc-1"');
      expect(run.measurements.at(-1).values[0]).toBeGreaterThan(0.1);
      expect(targetStates(failed)).toEqual({ 'vc-1': 'SUCCEEDED', 'vc-2': 'CANCELLED', 'vc-3': 'CANCELLED' });
      expect(apiServerImages()).toEqual([`vc-1=${DEGRADED}`, `vc-2=${APISERVER}`, `vc-3=${APISERVER}`]);
      // The kind does not roll itself back; a rollback re-applies the previous spec to the cluster it upgraded.
      expect((await ended(await rollBack(bad))).state).toBe('SUCCEEDED');
      expect(apiServerImages()).toEqual(CLUSTERS.map((vc) => `${vc}=${APISERVER}`));

      const HEALTHY = `${APISERVER}:v1.16.3`;
      const good = await bump(HEALTHY, APISERVER_ERRORS);
      expect(await measuring(good)).toMatch(/^analysis targets:1: measuring, [0-2] of 2 measurements/);
      const passed = await ended(good);
      expect(passed.state).toBe('SUCCEEDED');
      expect(passed.gates).toEqual([{ key: 'targets:1', type: 'ANALYSIS', state: 'PASSED' }]);
      expect(apiServerImages()).toEqual(CLUSTERS.map((vc) => `${vc}=${HEALTHY}`));
    });
  });
});
