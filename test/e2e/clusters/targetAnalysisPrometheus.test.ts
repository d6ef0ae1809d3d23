import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { startCli } from '../../cli/cliHarness.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, memberPool, registerMembers } from '../../helpers/memberFleet.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../../helpers/prometheus.js';
import { until } from '../../helpers/until.js';

/**
 * Analysis between the targets of a rollout without waves (issue 33, ADR 0071): a 20-pool rollout in one cluster, with
 * Debian's Prometheus scraping the simulator's per-pool agent metrics. After every 5 pools an analysis compares the
 * upgraded pools' DHCP error rate with the pools not yet upgraded (the control group, told apart by their `version`
 * label) before more are admitted. The simulator's `…errors-<n>` tags make agents that are healthy but fail n DHCP
 * requests a second:
 * - from errors-10 to errors-13 (30 % more errors on the upgraded pools): the first analysis fails, the rollout fails
 *   there, and its auto-rollback puts the 5 upgraded pools back; the other 15 were never touched;
 * - from errors-10 to another errors-10 release (the same absolute level on both groups): every step passes.
 */
const REPO = 'rancher/harvester-vm-dhcp-agent';
const BASE = `${REPO}:v0.3.0-errors-10`;
const WORSE = `${REPO}:v0.3.1-errors-13`;
const SAME = `${REPO}:v0.3.2-errors-10`;
const POOLS = Array.from({ length: 20 }, (_, i) => `net-${i + 1}`);

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: dhcp-errors-vs-baseline }
spec:
  args: [{ name: version }, { name: baselineVersion }, { name: name }]
  metrics:
  - name: errors
    initialDelay: 6s
    interval: 2s
    count: 3
    noData: WAIT(30s)
    provider:
      prometheus:
        query: avg(rate(sim_dhcp_errors_total{job="edge-1",version="{{args.version}}",pool=~"{{args.name}}"}[5s]))
    baseline:
      query: avg(rate(sim_dhcp_errors_total{job="edge-1",version="{{args.baselineVersion}}"}[5s]))
      direction: increase
      maxRatio: 1.2
      minDelta: 0.5
`;

const ROLLOUT = `query ($id: ID!) { rollout(id: $id) {
  state message
  strategy { analysis { every config } }
  gates { key type state reason }
  gate(key: "targets:5") {
    key type state
    analysisRuns { id attempt phase message args measurements { metric number query values baselineQuery baselineValues verdict } }
  }
} }`;

describeWithPrometheus('analysis between the targets of a 20-pool rollout in one cluster, against a real Prometheus', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane target analysis '));
  let fleet: SimulatedClusters;
  let prometheus: TestPrometheus;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: `pools=${POOLS.length},nodes=1` }] });
    prometheus = await startTestPrometheus([{ url: fleet.clusters.get('edge-1')!.simulator.url, job: 'edge-1' }], 1000);
    registerMembers(dir, fleet, ['edge-1'], () => ({ tier: 'edge' }));
    app = await startTestApp({
      databaseFile: path.join(dir, 'rollplane.db'),
      env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1', ROLLPLANE_PROMETHEUS_URL: prometheus.url },
    });
    await until('the member driven by its own runtime', () =>
      app.memberRuntimes?.snapshot().some((r) => r.cluster === 'edge-1' && r.running && r.kinds.includes('AGENT_POOL')),
    );
    await prometheus.waitForSeries('sim_dhcp_leases_total{job="edge-1"}', { min: POOLS.length });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await prometheus?.stop();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const images = () => POOLS.map((name) => memberPool(fleet, 'edge-1', name)?.status.agentPodRef.image as string);
  const bump = async (image: string, strategy: Record<string, unknown>) => {
    const result = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id state } } }', {
      input: { image, memberClusters: { names: ['edge-1'] }, pools: { names: POOLS }, strategy, allowDowngrade: true },
    });
    expect(result.errors).toBeUndefined();
    return result.data.bumpAgentImage.rollout.id as string;
  };
  const untilEnded = async (id: string) => {
    await until(
      `rollout ${id} ended`,
      async () =>
        ['SUCCEEDED', 'FAILED', 'PAUSED', 'ROLLED_BACK'].includes(
          (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id })).data?.rollout?.state,
        ),
      { timeoutMs: 150_000, intervalMs: 500 },
    );
    const result = await gql(app.url, ROLLOUT, { id });
    expect(result.errors).toBeUndefined();
    return result.data.rollout;
  };
  const analysis = { every: 5, config: { template: TEMPLATE } };

  it('refuses a malformed analysis at submit, naming the field, and starts nothing', async () => {
    const refused = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: {
        image: WORSE,
        memberClusters: { names: ['edge-1'] },
        strategy: { analysis: { every: 5, config: { template: TEMPLATE.replace('avg(rate', 'avg(rate(') } } },
        allowDowngrade: true,
      },
    });
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0]?.message).toMatch(/^input\.strategy\.analysis\.config\.template\.spec\.metrics\[0\]\.provider\.prometheus\.query: /);
    const noStep = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: WORSE, memberClusters: { names: ['edge-1'] }, strategy: { analysis: { config: { template: TEMPLATE } } }, allowDowngrade: true },
    });
    expect(noStep.errors?.[0]?.message).toMatch(/input\.strategy\.analysis: needs `every` or `after`/);
  });

  it('fails a 20-pool rollout whose upgraded pools err 30 % more than the pools not yet upgraded, and passes one at the same level', async () => {
    // Every pool on the baseline release first (no analysis).
    const base = await untilEnded(await bump(BASE, { maxUnavailable: '100%' }));
    expect(base.state).toBe('SUCCEEDED');
    expect(new Set(images())).toEqual(new Set([BASE]));
    await prometheus.waitForSeries(`sim_dhcp_errors_total{job="edge-1",version="v0.3.0-errors-10"}`, { min: POOLS.length });

    // 30 % more errors on the upgraded pools: the analysis after the first 5 fails the rollout, which rolls them back.
    const worse = await bump(WORSE, { maxUnavailable: '5', analysis });
    const failed = await untilEnded(worse);
    expect(failed.state).toMatch(/^(FAILED|ROLLED_BACK)$/);
    expect(failed.message).toMatch(/^analysis targets:5: analysis .* failed/);
    expect(failed.strategy.analysis).toMatchObject({ every: 5 });
    expect(failed.gates).toEqual([expect.objectContaining({ key: 'targets:5', type: 'ANALYSIS', state: 'FAILED' })]);
    const [run] = failed.gate.analysisRuns;
    expect(run).toMatchObject({ attempt: 1, phase: 'FAILED', args: { version: 'v0.3.1-errors-13', baselineVersion: 'v0.3.0-errors-10' } });
    expect(run.args.name.split('|')).toHaveLength(5);
    const decided = run.measurements.filter((m: { verdict: string }) => m.verdict === 'FAILED');
    expect(decided.length).toBeGreaterThan(0);
    // Why: the upgraded pools' rate against the control group's, both kept with the measurement.
    expect(decided[0].query).toContain('version="v0.3.1-errors-13"');
    expect(decided[0].baselineQuery).toContain('version="v0.3.0-errors-10"');
    expect(decided[0].values[0]).toBeGreaterThan(decided[0].baselineValues[0] * 1.2);
    // The rollback puts the 5 back; the 15 others were never admitted.
    await until(
      'the automatic rollback done',
      async () => (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id: worse })).data?.rollout?.state === 'ROLLED_BACK',
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(new Set(images())).toEqual(new Set([BASE]));
    const upgraded = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { targets(state: SUCCEEDED) { totalCount } } }', { id: worse });
    expect(upgraded.data.rollout.targets.totalCount).toBe(5);

    // The same absolute error level on both groups: every step (after 5, 10 and 15 pools) passes. The template is
    // named this time (stored once, copied at submit).
    const stored = await gql(app.url, 'mutation ($input: AnalysisTemplateInput!) { createAnalysisTemplate(input: $input) { name } }', {
      input: { name: 'dhcp-errors-vs-baseline', template: TEMPLATE },
    });
    expect(stored.errors).toBeUndefined();
    const same = await untilEnded(await bump(SAME, { maxUnavailable: '5', analysis: { every: 5, config: { templateName: 'dhcp-errors-vs-baseline' } } }));
    expect(same.state).toBe('SUCCEEDED');
    expect(same.gates.map((g: { key: string; state: string }) => `${g.key}=${g.state}`)).toEqual([
      'targets:5=PASSED',
      'targets:10=PASSED',
      'targets:15=PASSED',
    ]);
    expect(new Set(images())).toEqual(new Set([SAME]));
  });

  it('pauses on an inconclusive step with the reason; retry-gate measures again as a linked attempt; a resume accepts it', async () => {
    const NEXT = `${REPO}:v0.3.3-errors-10`;
    const inconclusive = TEMPLATE.replace('noData: WAIT(30s)', 'noData: INCONCLUSIVE').replace('avg(rate(sim_dhcp_errors_total', 'avg(rate(sim_no_such_series');
    const id = await bump(NEXT, { maxUnavailable: '5', analysis: { after: [1], config: { template: inconclusive } } });
    const paused = await untilEnded(id);
    expect(paused.state).toBe('PAUSED');
    expect(paused.message).toMatch(/^analysis targets:1: analysis .* inconclusive/);
    expect(images().filter((image) => image === NEXT)).toHaveLength(1);
    const gate = async () =>
      (
        await gql(
          app.url,
          'query ($id: ID!) { rollout(id: $id) { state gate(key: "targets:1") { state reason analysisRuns { id attempt previousRunId phase } } } }',
          { id },
        )
      ).data.rollout;
    const first = (await gate()).gate.analysisRuns[0];
    expect(first).toMatchObject({ attempt: 1, phase: 'INCONCLUSIVE' });

    // Bad keys change nothing; the CLI's retry measures again, linked to the first attempt, and the rollout waits on it.
    const retryGate = (key: string) =>
      gql(app.url, 'mutation ($id: ID!, $gate: String!) { retryGate(rolloutId: $id, gate: $gate) { key } }', { id, gate: key });
    expect((await retryGate('targets:2')).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await retryGate('targets:0')).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const retried = await startCli(['rollout', 'retry-gate', id, '--gate', 'targets:1', '--url', app.url]).done;
    expect(retried.stderr).toBe('');
    expect(retried.stdout).toMatch(/^gate targets:1 \(ANALYSIS\): (WAITING|FAILED): /);
    const again = await until(
      'the retried step decided',
      async () => {
        const r = await gate();
        return r.gate.analysisRuns.length === 2 && r.gate.analysisRuns[1].phase !== 'RUNNING' && r.state === 'PAUSED' ? r : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    );
    expect(again.gate.analysisRuns[1]).toMatchObject({ attempt: 2, previousRunId: first.id, phase: 'INCONCLUSIVE' });
    expect(again.gate.reason).toMatch(/^attempt 2: /);
    expect(images().filter((image) => image === NEXT)).toHaveLength(1);

    // A resume accepts the step: the rest is admitted (no more steps), and the gate stays as measured.
    expect((await gql(app.url, 'mutation ($id: ID!) { resumeRollout(id: $id) { state } }', { id })).errors).toBeUndefined();
    const done = await untilEnded(id);
    expect(done.state).toBe('SUCCEEDED');
    expect(new Set(images())).toEqual(new Set([NEXT]));
  });

  it('cancels the analysis of a rollout a newer one superseded, recording why', async () => {
    const long = TEMPLATE.replace('count: 3', 'count: 120').replace('interval: 2s', 'interval: 1s');
    const old = await bump(`${REPO}:v0.3.4-errors-10`, { maxUnavailable: '5', analysis: { after: [1], config: { template: long } } });
    const runOf = async (id: string) =>
      (
        await gql(
          app.url,
          'query ($id: ID!) { rollout(id: $id) { state gate(key: "targets:1") { analysisRuns { phase message measurements { number } } } } }',
          { id },
        )
      ).data.rollout;
    await until('the step measuring', async () => ((await runOf(old)).gate?.analysisRuns?.[0]?.measurements.length ?? 0) > 0, {
      timeoutMs: 90_000,
      intervalMs: 1000,
    });
    // The rollout says what it waits on: the step, and how far its measurements are.
    const waiting = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state waitingFor } }', { id: old });
    expect(waiting.data.rollout).toMatchObject({
      state: 'PROGRESSING',
      waitingFor: expect.stringMatching(/^analysis targets:1: measuring, \d+ of 120 measurements/),
    });
    const result = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: {
        image: `${REPO}:v0.3.5-errors-10`,
        memberClusters: { names: ['edge-1'] },
        pools: { names: POOLS },
        strategy: { maxUnavailable: '100%' },
        supersede: true,
        allowDowngrade: true,
      },
    });
    expect(result.errors).toBeUndefined();
    const cancelled = await until(
      'the old analysis cancelled',
      async () => {
        const r = await runOf(old);
        return r.gate.analysisRuns[0].phase === 'CANCELLED' ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(cancelled.state).toBe('ABORTED');
    expect(cancelled.gate.analysisRuns[0].message).toMatch(/ is ABORTED: superseded/);
    const measured = cancelled.gate.analysisRuns[0].measurements.length;
    expect(measured).toBeLessThan(120);
    // The gate says why, and offers no retry: retryGate refuses an ended rollout's gates (attack 19, F10).
    const gate = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { gate(key: "targets:1") { state reason } } }', { id: old });
    expect(gate.data.rollout.gate.state).toBe('WAITING');
    expect(gate.data.rollout.gate.reason).toMatch(/cancelled: rollout \S+ is ABORTED: superseded/);
    expect(gate.data.rollout.gate.reason).not.toMatch(/retry/);
    const retry = await gql(app.url, 'mutation ($id: ID!) { retryGate(rolloutId: $id, gate: "targets:1") { state } }', { id: old });
    expect(retry.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect((await untilEnded(result.data.bumpAgentImage.rollout.id)).state).toBe('SUCCEEDED');
    // Nothing is measured for it after the cancellation.
    expect((await runOf(old)).gate.analysisRuns[0].measurements.length).toBe(measured);
  });
});
