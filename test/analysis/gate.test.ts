import { describe, expect, it } from 'vitest';
import { analysisGateProgress } from '../../src/analysis/gate.js';
import type { AnalysisPhase, AnalysisRunRecord } from '../../src/analysis/model.js';

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
      reason: 'analysis run-1 cancelled: superseded by rollout r2; retry it to measure again',
      until: null,
    });
  });
});
