import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnalysisGates } from '../../src/analysis/AnalysisGates.js';
import type { PrometheusClient } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { FakeClock } from '../../src/util/FakeClock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { parsePrometheusText } from '../helpers/promText.js';

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

const template = (name: string) =>
  parseAnalysisTemplate({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AnalysisTemplate',
    metadata: { name },
    spec: {
      metrics: [
        {
          name: 'error-rate',
          interval: '1s',
          count: 2,
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

  it('exports the last value, the threshold and the decisions by outcome', async () => {
    const scrape = async () => (await fetch(`${app.baseUrl}/metrics`)).text();
    const before = await scrape();
    expect(before).toContain('# TYPE rollplane_analysis_value gauge');
    expect(before).toContain('# TYPE rollplane_analysis_threshold gauge');
    expect(before).toContain('# TYPE rollplane_analysis_decisions_total counter');

    const run = async (name: string, values: number[], rolloutId: string) => {
      const clock = new FakeClock();
      const gates = new AnalysisGates({ store: app.db.analysis, clock, prometheus: () => answering(values), metrics: app.metrics.analysis });
      const opened = await gates.open({ rolloutId, gateKey: 'after:canary', cluster: 'local', target: null, wave: 0 }, template(name), {});
      for (let i = 0; i < 30 && gates.measuring().length > 0; i++) await clock.advance(1000);
      return (await app.db.analysis.findRun(opened.id))!.phase;
    };
    expect(await run('healthy', [0.1, 0.2], 'rollout-1')).toBe('SUCCESSFUL');
    expect(await run('degraded', [0.9], 'rollout-2')).toBe('FAILED');

    const text = await scrape();
    expect(samples(text, 'rollplane_analysis_value')).toEqual({ 'healthy/error-rate': 0.2, 'degraded/error-rate': 0.9 });
    expect(samples(text, 'rollplane_analysis_threshold')).toEqual({ 'healthy/error-rate': 0.25, 'degraded/error-rate': 0.25 });
    expect(samples(text, 'rollplane_analysis_decisions_total')).toEqual({ SUCCESSFUL: 1, FAILED: 1 });
  });
});
