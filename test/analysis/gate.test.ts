import { describe, expect, it } from 'vitest';
import { analysisGateProgress, measuringText } from '../../src/analysis/gate.js';
import type { AnalysisPhase, AnalysisRunRecord, MeasurementRecord, MeasurementTally, MeasurementVerdict } from '../../src/analysis/model.js';

const run = (phase: AnalysisPhase, message: string | null = null): AnalysisRunRecord => ({
  id: 'run-1',
  rolloutId: 'r',
  cluster: 'local',
  target: null,
  wave: 1,
  templateName: 't',
  template: '{}',
  args: {},
  phase,
  message,
  metricPhases: {},
  previousRunId: null,
  gateKey: 'after:canary',
  attempt: 1,
  startedAt: new Date(0),
  finishedAt: null,
});

describe('an analysis run as a staged run gate', () => {
  it('passes when Successful, fails when Failed, holds with the reason when Inconclusive, Error or still measuring', () => {
    expect(analysisGateProgress(undefined)).toEqual({ state: 'WAITING', reason: 'analysis not started' });
    expect(analysisGateProgress(run('RUNNING')).state).toBe('WAITING');
    expect(analysisGateProgress(run('SUCCESSFUL')).state).toBe('PASSED');
    expect(analysisGateProgress(run('FAILED', 'metric "errors": failed (1) > failureLimit (0)'))).toEqual({
      state: 'FAILED',
      reason: 'analysis run-1 failed: metric "errors": failed (1) > failureLimit (0)',
    });
    expect(analysisGateProgress(run('INCONCLUSIVE', 'no data'))).toMatchObject({
      state: 'WAITING',
      reason: 'analysis run-1 inconclusive: no data; retry it or decide',
    });
    expect(analysisGateProgress(run('ERROR', 'UNREACHABLE')).state).toBe('WAITING');
    expect(analysisGateProgress(run('ERROR', 'UNREACHABLE'), { errorFails: true }).state).toBe('FAILED');
    // Cancelled (a superseding rollout): held with the reason, never passed, never a failure that sets off a rollback.
    expect(analysisGateProgress(run('CANCELLED', 'superseded by rollout r2'))).toEqual({
      state: 'WAITING',
      reason: 'analysis run-1 cancelled: superseded by rollout r2',
      until: null,
    });
  });
});

describe('an analysis run still measuring, as Rollout.waitingFor says it', () => {
  const metric = (name: string, count: number) => ({
    name,
    interval: '1s',
    count,
    provider: { prometheus: { query: `sum(rate(${name}_total[1m]))` } },
  });
  const template = JSON.stringify({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AnalysisTemplate',
    metadata: { name: 't' },
    spec: { metrics: [metric('errors', 3), metric('starts', 2)] },
  });
  let seq = 0;
  const measured = (metricName: string, verdict: MeasurementVerdict, message: string | null = null): MeasurementRecord => ({
    id: seq,
    runId: 'run-1',
    metricName,
    seq: seq++,
    query: 'q',
    values: [],
    condition: null,
    threshold: null,
    verdict,
    noData: verdict === 'WAITING',
    dryRun: false,
    message,
    baselineQuery: null,
    baselineValues: null,
    startedAt: new Date(0),
    finishedAt: new Date(0),
  });
  const running = { ...run('RUNNING'), template };
  /** The tally the store counts (contract-tested on both stores), from rows. */
  const tally = (rows: MeasurementRecord[]): MeasurementTally => {
    const decided = new Map<string, number>();
    for (const m of rows) if (m.verdict !== 'ERROR' && m.verdict !== 'WAITING') decided.set(m.metricName, (decided.get(m.metricName) ?? 0) + 1);
    const last = rows.at(-1);
    return { decided, latest: last && { verdict: last.verdict, message: last.message } };
  };

  it('counts measurements as the runner does: errors and waits for data are taken again, each metric up to its count', () => {
    expect(measuringText(running, tally([]))).toBe('measuring, 0 of 5 measurements');
    expect(measuringText(running, tally([measured('errors', 'SUCCESSFUL'), measured('starts', 'SUCCESSFUL')]))).toBe('measuring, 2 of 5 measurements');
    expect(measuringText(running, tally([measured('errors', 'SUCCESSFUL'), measured('starts', 'WAITING')]))).toBe(
      'measuring, 1 of 5 measurements, waiting for data',
    );
    expect(measuringText(running, tally([measured('starts', 'SUCCESSFUL'), measured('errors', 'ERROR', 'UNREACHABLE')]))).toBe(
      'measuring, 1 of 5 measurements, the latest errored (UNREACHABLE)',
    );
    const many = [1, 2, 3].map(() => measured('starts', 'SUCCESSFUL'));
    expect(measuringText({ ...running, attempt: 2 }, tally(many))).toBe('attempt 2: measuring, 2 of 5 measurements');
  });
});
