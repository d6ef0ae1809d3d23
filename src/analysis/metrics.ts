import { Counter, Gauge, type Registry } from 'prom-client';
import type { AnalysisOutcome } from './model.js';

/**
 * Analysis on rollplane's `/metrics`. `outcome` is one of four. `template` and `metric` are a template's name (a
 * DNS-1123 object name) and its metrics' names (at most 32, 63 safe characters each): a value or threshold series
 * exists only while this process measures a run of that template (holdSeries), so their number is bounded by the runs
 * in flight, not by every template ever measured (attack 19, F9). No rollout, target or cluster label: those are in the
 * measurements' rows, without limit.
 */
export interface AnalysisMetrics {
  value: Gauge<'template' | 'metric'>;
  threshold: Gauge<'template' | 'metric'>;
  decisions: Counter<'outcome'>;
  /** How many runs this process measures per (template, metric) series, by their labels' JSON. */
  held: Map<string, number>;
}

type SeriesLabels = { template: string; metric: string };

/**
 * Holds the value and threshold series of a run's metrics while it is measured here; the returned function lets go
 * of them, and a series no run holds any more is removed (a run decided, cancelled, or let go to another replica).
 */
export function holdSeries(metrics: AnalysisMetrics | undefined, series: readonly SeriesLabels[]): () => void {
  if (!metrics) return () => {};
  const keys = series.map((labels) => ({ labels, key: JSON.stringify([labels.template, labels.metric]) }));
  for (const { key } of keys) metrics.held.set(key, (metrics.held.get(key) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const { labels, key } of keys) {
      const left = (metrics.held.get(key) ?? 1) - 1;
      if (left > 0) {
        metrics.held.set(key, left);
        continue;
      }
      metrics.held.delete(key);
      metrics.value.remove(labels);
      metrics.threshold.remove(labels);
    }
  };
}

export function createAnalysisMetrics(registry: Registry): AnalysisMetrics {
  return {
    value: new Gauge({
      name: 'rollplane_analysis_value',
      help: "The last value an analysis measured (a vector's first series; NaN as Prometheus answered it), by template and metric, while a run of the template is measured; a measurement with no value (an error, an empty answer) leaves it as it was.",
      labelNames: ['template', 'metric'],
      registers: [registry],
    }),
    threshold: new Gauge({
      name: 'rollplane_analysis_threshold',
      help: "The number an analysis metric's condition compares its value with, by template and metric, while a run of the template is measured (draw it beside rollplane_analysis_value).",
      labelNames: ['template', 'metric'],
      registers: [registry],
    }),
    decisions: new Counter({
      name: 'rollplane_analysis_decisions_total',
      help: 'Analysis runs decided, by outcome: SUCCESSFUL, FAILED, INCONCLUSIVE, ERROR.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    held: new Map(),
  };
}

export function countDecision(metrics: AnalysisMetrics | undefined, outcome: AnalysisOutcome): void {
  metrics?.decisions.inc({ outcome });
}
