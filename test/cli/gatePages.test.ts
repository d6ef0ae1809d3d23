/**
 * `rollplane rollout gate` reads a gate's measurements a page at a time (attack 24, H3): every row carries its query
 * (up to 32 KB with its arguments in), and one answer of all of them went over the server's 4 MiB limit.
 */
import { describe, expect, it } from 'vitest';
import { type GateReport, gateWithEveryMeasurement, MEASUREMENT_PAGE } from '../../src/cli/commands/rollout.js';

type Measurement = GateReport['analysisRuns'][number]['measurements'][number];

const measurement = (metric: string, number: number): Measurement =>
  ({
    metric,
    number,
    query: `q-${metric}`,
    values: [],
    condition: null,
    threshold: null,
    verdict: 'SUCCESSFUL',
    noData: false,
    dryRun: false,
    message: null,
    startedAt: '',
    finishedAt: '',
  }) as unknown as Measurement;

/** A gate whose runs hold `counts[i]` measurements each, served `first` from `after`. */
function pagedGate(counts: readonly number[]) {
  const asked: [number, number][] = [];
  const read = async (first: number, after: number): Promise<GateReport> => {
    asked.push([first, after]);
    return {
      key: 'targets:1',
      type: 'ANALYSIS',
      state: 'WAITING',
      reason: '',
      decisions: [],
      attempts: [],
      analysisRuns: counts.map((count, i) => ({
        id: `run-${i}`,
        attempt: i + 1,
        previousRunId: null,
        phase: 'RUNNING',
        message: null,
        templateName: null,
        startedAt: '',
        finishedAt: null,
        measurements: Array.from({ length: Math.max(0, Math.min(first, count - after)) }, (_, n) => measurement('m', after + n)),
      })),
    } as unknown as GateReport;
  };
  return { read, asked };
}

describe('rollplane rollout gate: measurements page by page', () => {
  it('reads every measurement of every run, a page at a time, and stops at the first short page of all', async () => {
    const { read, asked } = pagedGate([MEASUREMENT_PAGE * 2 + 7, 3]);
    const gate = await gateWithEveryMeasurement(read);
    expect(gate!.analysisRuns.map((run) => run.measurements.length)).toEqual([MEASUREMENT_PAGE * 2 + 7, 3]);
    expect(gate!.analysisRuns[0]!.measurements.map((m) => m.number)).toEqual(Array.from({ length: MEASUREMENT_PAGE * 2 + 7 }, (_, n) => n));
    expect(asked).toEqual([
      [MEASUREMENT_PAGE, 0],
      [MEASUREMENT_PAGE, MEASUREMENT_PAGE],
      [MEASUREMENT_PAGE, MEASUREMENT_PAGE * 2],
    ]);
  });

  it('says nothing was found when the gate is not there', async () => {
    expect(await gateWithEveryMeasurement(async () => null)).toBeUndefined();
  });
});
