/**
 * An ANALYSIS gate's measurements as the run page charts them (AnalysisCharts.tsx, issue 33): one chart per metric, in
 * the order the metrics were first measured. No React and no DOM: test/ui/analysisModel.test.ts checks it.
 */

export interface Measurement {
  metric: string;
  number: number;
  /** What Prometheus answered: numbers, or `NaN`, `+Inf`, `-Inf` as strings. */
  values: unknown;
  baselineValues: unknown;
  threshold: number | null;
  condition: string | null;
  verdict: string;
  finishedAt: string;
}

/** One metric's chart: x in seconds (each measurement's end), its first value, the threshold, the baseline's first value. */
export interface MetricChart {
  metric: string;
  condition: string | null;
  x: number[];
  /** null where a measurement has no finite first value (no data, NaN, ±Inf): a gap, never a made-up number. */
  value: (number | null)[];
  /** The condition's number at each measurement (null where it had none); null when no measurement had one. */
  threshold: (number | null)[] | null;
  /** The baseline's first value (the targets not yet upgraded); null when the metric has no baseline. */
  baseline: (number | null)[] | null;
  verdicts: Record<string, number>;
}

/** The first value as a finite number, or null. */
export function firstNumber(values: unknown): number | null {
  const first: unknown = Array.isArray(values) ? values[0] : values;
  return typeof first === 'number' && Number.isFinite(first) ? first : null;
}

export function metricCharts(measurements: readonly Measurement[]): MetricChart[] {
  const byMetric = new Map<string, Measurement[]>();
  for (const m of measurements) byMetric.set(m.metric, [...(byMetric.get(m.metric) ?? []), m]);
  return [...byMetric].map(([metric, list]) => {
    const ordered = [...list].sort((a, b) => a.number - b.number);
    const threshold = ordered.map((m) => m.threshold);
    const baseline = ordered.map((m) => firstNumber(m.baselineValues));
    const verdicts: Record<string, number> = {};
    for (const m of ordered) verdicts[m.verdict] = (verdicts[m.verdict] ?? 0) + 1;
    return {
      metric,
      condition: ordered.findLast((m) => m.condition !== null)?.condition ?? null,
      x: ordered.map((m) => Date.parse(m.finishedAt) / 1000),
      value: ordered.map((m) => firstNumber(m.values)),
      threshold: threshold.some((t) => t !== null) ? threshold : null,
      baseline: ordered.some((m) => m.baselineValues !== null && m.baselineValues !== undefined) ? baseline : null,
      verdicts,
    };
  });
}
