import { describe, expect, it } from 'vitest';
import { firstNumber, type Measurement, metricCharts } from '../../src/ui/client/analysisModel.js';

/** The run page's chart per analysis metric (src/ui/client/analysisModel.ts): values, gaps, threshold and baseline. */
const at = (s: number) => new Date(Date.UTC(2026, 11, 5, 12, 0, s)).toISOString();
const m = (metric: string, number: number, values: unknown, extra: Partial<Measurement> = {}): Measurement => ({
  metric,
  number,
  values,
  baselineValues: null,
  threshold: null,
  condition: null,
  verdict: 'SUCCESSFUL',
  finishedAt: at(number),
  ...extra,
});

describe('the chart per analysis metric', () => {
  it('draws each metric apart, in measurement order, with its threshold and verdict counts', () => {
    const charts = metricCharts([
      m('errors', 1, [2], { threshold: 0, condition: 'failure: result[0] > 0', verdict: 'FAILED' }),
      m('leases', 0, [5.5], { threshold: 0, condition: 'success: result[0] > 0' }),
      m('errors', 0, [0], { threshold: 0, condition: 'failure: result[0] > 0' }),
    ]);
    expect(charts.map((c) => c.metric)).toEqual(['errors', 'leases']);
    expect(charts[0]).toEqual({
      metric: 'errors',
      condition: 'failure: result[0] > 0',
      x: [Date.parse(at(0)) / 1000, Date.parse(at(1)) / 1000],
      value: [0, 2],
      threshold: [0, 0],
      baseline: null,
      verdicts: { SUCCESSFUL: 1, FAILED: 1 },
    });
  });

  it('leaves a gap for no data, NaN and infinities (never a number it did not measure); no threshold line without one', () => {
    const [chart] = metricCharts([m('x', 0, []), m('x', 1, ['NaN']), m('x', 2, ['+Inf']), m('x', 3, [1]), m('x', 4, null)]);
    expect(chart!.value).toEqual([null, null, null, 1, null]);
    expect(chart!.threshold).toBeNull();
    expect(firstNumber(3)).toBe(3);
    expect(firstNumber('3')).toBeNull();
  });

  it('draws the baseline (the targets not yet upgraded) when the metric compares with it', () => {
    const [chart] = metricCharts([m('x', 0, [1.3], { baselineValues: [1] }), m('x', 1, [1.2], { baselineValues: ['NaN'] })]);
    expect(chart!.baseline).toEqual([1, null]);
  });
});
