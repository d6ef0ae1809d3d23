import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { describeWithPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

/**
 * The analysis demo's Prometheus (`ROLLPLANE_SIM_PROMETHEUS=on`, docs/analysis.md): the service starts the machine's
 * Prometheus beside its simulators, scraping them, and uses it as its own — an analysis between pools can be submitted
 * with no ROLLPLANE_PROMETHEUS_URL, and Prometheus holds the simulator's agent metrics (job `local`, the member's name).
 */
const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: leases }
spec:
  metrics:
  - name: leases
    successCondition: result[0] > 0
    provider: { prometheus: { query: 'sum(rate(sim_dhcp_leases_total[30s]))' } }
`;

describeWithPrometheus('ROLLPLANE_SIM_PROMETHEUS=on: the demo with a real Prometheus', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=2', ROLLPLANE_SIM_MEMBER_CLUSTERS: 'demo', ROLLPLANE_SIM_PROMETHEUS: 'on' } });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
  });

  it("scrapes the simulators and is rollplane's Prometheus", async () => {
    const url = app.config.gates.prometheusUrl;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const jobs = await until(
      'every simulator scraped',
      async () => {
        const response = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: 'count by (job) (sim_dhcp_leases_total)' })}`);
        const body = (await response.json()) as { data: { result: { metric: { job: string } }[] } };
        const found = body.data.result.map((r) => r.metric.job).sort();
        return found.length === 3 ? found : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(jobs).toEqual(['edge-1', 'edge-2', 'local']);
    const bump = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { dryRun } }', {
      input: { image: 'rancher/harvester-vm-dhcp-agent:v0.3.1', dryRun: true, strategy: { analysis: { every: 1, config: { template: TEMPLATE } } } },
    });
    expect(bump.errors).toBeUndefined();
  });
});
