import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnalysisGates } from '../../src/analysis/AnalysisGates.js';
import type { PrometheusClient } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { FakeClock } from '../../src/util/FakeClock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { parsePrometheusText } from '../helpers/promText.js';
import { until } from '../helpers/until.js';

/**
 * The analysis series on the service's own /metrics (issue 33): registered on the app's registry, and moved by the
 * measurements and decisions of the gates that use the app's metrics — read back over HTTP as Prometheus scrapes them.
 * The measured values are scripted (a real Prometheus measures in test/analysis/analysisGatePrometheus.test.ts).
 */

function answering(values: number[]): PrometheusClient {
  let asked = 0;
  return {
    baseUrl: 'http://prometheus.test',
    query: async () => ({ type: 'vector', samples: [{ labels: {}, value: values[Math.min(asked++, values.length - 1)]! }] }),
  } as unknown as PrometheusClient;
}

const template = (name: string, count = 2) =>
  parseAnalysisTemplate({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AnalysisTemplate',
    metadata: { name },
    spec: {
      metrics: [
        {
          name: 'error-rate',
          interval: '1s',
          count,
          successCondition: 'result[0] < 0.25',
          provider: { prometheus: { query: 'sum(rate(sim_dhcp_errors_total[1m]))' } },
        },
      ],
    },
  });

/** One series family of a /metrics text, as `label values joined by "/" → value`. */
function samples(text: string, name: string): Record<string, number> {
  return Object.fromEntries(
    parsePrometheusText(text)
      .filter((sample) => sample.name === name)
      .map((sample) => [Object.values(sample.labels).join('/'), sample.value]),
  );
}

describe('analysis on /metrics', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('exports the last value and the threshold while a run measures, removes them when it ends, and counts decisions', async () => {
    const scrape = async () => (await fetch(`${app.baseUrl}/metrics`)).text();
    const before = await scrape();
    expect(before).toContain('# TYPE rollplane_analysis_value gauge');
    expect(before).toContain('# TYPE rollplane_analysis_threshold gauge');
    expect(before).toContain('# TYPE rollplane_analysis_decisions_total counter');

    const clock = new FakeClock();
    const start = async (name: string, values: number[], rolloutId: string, count: number) => {
      const gates = new AnalysisGates({ store: app.db.analysis, clock, prometheus: () => answering(values), metrics: app.metrics.analysis });
      const opened = await gates.open({ rolloutId, gateKey: 'after:canary', cluster: 'local', target: null, wave: 0 }, template(name, count), {});
      return { gates, id: opened.id };
    };
    const healthy = await start('healthy', [0.1, 0.2], 'rollout-1', 3);
    const degraded = await start('degraded', [0.1, 0.9], 'rollout-2', 2);
    // Both measuring: the first measurement is due at once.
    await until(
      'the first measurement of each run',
      async () => (await app.db.analysis.measurementsOf(healthy.id)).length === 1 && (await app.db.analysis.measurementsOf(degraded.id)).length === 1,
    );
    const measuring = await scrape();
    expect(samples(measuring, 'rollplane_analysis_value')).toEqual({ 'healthy/error-rate': 0.1, 'degraded/error-rate': 0.1 });
    expect(samples(measuring, 'rollplane_analysis_threshold')).toEqual({ 'healthy/error-rate': 0.25, 'degraded/error-rate': 0.25 });

    // degraded fails at its second measurement: its series are gone, healthy's stay while it measures its third.
    await clock.advance(1000);
    await until('degraded decided', async () => (await app.db.analysis.findRun(degraded.id))!.phase === 'FAILED');
    await until("degraded's series removed", async () => !(await scrape()).includes('template="degraded"'));
    expect(samples(await scrape(), 'rollplane_analysis_threshold')).toEqual({ 'healthy/error-rate': 0.25 });

    for (let i = 0; i < 30 && healthy.gates.measuring().length > 0; i++) await clock.advance(1000);
    expect((await app.db.analysis.findRun(healthy.id))!.phase).toBe('SUCCESSFUL');
    const after = await scrape();
    expect(samples(after, 'rollplane_analysis_value')).toEqual({});
    expect(samples(after, 'rollplane_analysis_threshold')).toEqual({});
    expect(samples(after, 'rollplane_analysis_decisions_total')).toEqual({ SUCCESSFUL: 1, FAILED: 1 });
  });
});
