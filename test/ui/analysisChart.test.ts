import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../helpers/memberFleet.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, type RestrictedPage, screenshot } from './browser.js';

/**
 * The chart per metric of an ANALYSIS gate on the run page (issue 33, docs/ui.md), against Debian's Prometheus scraping
 * two simulated members: a degraded-but-Ready image fails the analysis after the canary wave; the page draws each
 * metric's measurements with its threshold and counts the verdicts the API kept.
 */
const DEGRADED = 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1';
const MEMBERS = ['edge-1', 'edge-2'];
const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: dhcp-health }
spec:
  args: [{ name: cluster }, { name: version }]
  metrics:
  - name: errors
    interval: 1s
    count: 3
    failureCondition: result[0] > 0
    noData: WAIT(30s)
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{job=~"{{args.cluster}}",version="{{args.version}}"}[5s]))
`;

describeWithPrometheus('the chart per analysis metric', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane ui analysis '));
  let fleet: SimulatedClusters;
  let prometheus: TestPrometheus;
  let app: TestApp;
  let browser: Browser;
  let ui: RestrictedPage;

  beforeAll(async () => {
    ensureUiBuilt();
    fleet = await startSimulatedClusters({ clusters: MEMBERS.map((name) => ({ name, fleet: 'pools=2,nodes=1' })) });
    prometheus = await startTestPrometheus(
      MEMBERS.map((name) => ({ url: fleet.clusters.get(name)!.simulator.url, job: name })),
      1000,
    );
    registerMembers(dir, fleet, MEMBERS, (name) => ({ tier: 'edge', ring: name.slice(-1) }));
    app = await startTestApp({
      databaseFile: path.join(dir, 'rollplane.db'),
      env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1', ROLLPLANE_PROMETHEUS_URL: prometheus.url },
    });
    await until('every member driven by its own runtime', () =>
      MEMBERS.every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL'))),
    );
    await prometheus.waitForSeries('sim_dhcp_leases_total', { min: MEMBERS.length * 2 });
    browser = await launchChromium();
    ui = await openRestrictedPage(browser, app.baseUrl);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await prometheus?.stop();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('draws each measurement of a failing analysis with its threshold, and the verdicts the API kept', async () => {
    const bump = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: {
        image: DEGRADED,
        memberClusters: { labelSelector: 'tier=edge' },
        strategy: { maxUnavailable: '100%', autoRollback: false },
        waveStrategy: {
          waves: [
            { name: 'canary', clusters: { names: ['edge-1'] }, after: { type: 'ANALYSIS', config: { template: TEMPLATE } } },
            { name: 'rest', clusters: { names: ['edge-2'] } },
          ],
        },
        allowDowngrade: true,
      },
    });
    expect(bump.errors).toBeUndefined();
    const id: string = bump.data.bumpAgentImage.rollout.id;
    await ui.page.goto(`${app.baseUrl}/#/rollouts/${id}`);
    const gate = ui.page.locator('[data-gate="after:canary"]');
    // The page follows the run to the failed analysis without a reload.
    await expect.poll(() => gate.getAttribute('data-state'), { timeout: 90_000 }).toBe('FAILED');
    const figure = gate.locator('figure[data-metric="errors"]');
    await expect.poll(() => gate.locator('[data-analysis-phase]').getAttribute('data-analysis-phase'), { timeout: 15_000 }).toBe('FAILED');
    expect(await figure.getAttribute('data-threshold')).toBe('0');
    expect(await figure.locator('canvas').count()).toBeGreaterThan(0);
    const kept = (
      await gql(
        app.url,
        'query ($id: ID!) { rollout(id: $id) { state gate(key: "after:canary") { analysisRuns { measurements { metric verdict threshold } } } } }',
        { id },
      )
    ).data.rollout;
    expect(kept.state).toBe('PAUSED');
    const measurements: { verdict: string; threshold: number | null }[] = kept.gate.analysisRuns.at(-1).measurements;
    const byVerdict = new Map<string, number>();
    for (const m of measurements) byVerdict.set(m.verdict, (byVerdict.get(m.verdict) ?? 0) + 1);
    const counts = [...byVerdict].map(([verdict, n]) => `${verdict} × ${n}`);
    expect(counts.join(', ')).toMatch(/FAILED × \d/);
    await expect
      .poll(() => figure.locator('figcaption').textContent(), { timeout: 15_000 })
      .toBe(`errors · failure: result[0] > 0 · ${measurements.length} measurement${measurements.length === 1 ? '' : 's'}: ${counts.join(', ')}`);
    expect(await figure.locator('[role="img"]').getAttribute('aria-label')).toMatch(/^Measurements of errors against the threshold 0: /);
    expect(await gate.locator('.analysis > p').textContent()).toMatch(/^Attempt 1 of template dhcp-health: FAILED · /);
    await figure.scrollIntoViewIfNeeded();
    await screenshot(ui.page, 'analysis-chart');
    expect(ui.errors).toEqual([]);
    expect(ui.foreign).toEqual([]);
    await gql(app.url, 'mutation ($id: ID!) { abortRollout(id: $id) { state } }', { id });
  });
});
