import { Counter, Gauge, type Registry } from 'prom-client';
import type { AnalysisOutcome } from './model.js';

/**
 * Analysis on rollplane's `/metrics`. Labels are bounded by what people write, never by what runs: `template` and
 * `metric` name a template's metrics (a handful per template), `outcome` is one of four. No rollout, target or cluster
 * label: those are in the measurements' rows, without limit.
 */
export interface AnalysisMetrics {
  value: Gauge<'template' | 'metric'>;
  threshold: Gauge<'template' | 'metric'>;
  decisions: Counter<'outcome'>;
}

export function createAnalysisMetrics(registry: Registry): AnalysisMetrics {
  return {
    value: new Gauge({
      name: 'rollplane_analysis_value',
      help: "The last value an analysis measured (a vector's first series; NaN as Prometheus answered it), by template and metric; a measurement with no value (an error, an empty answer) leaves it as it was.",
      labelNames: ['template', 'metric'],
      registers: [registry],
    }),
    threshold: new Gauge({
      name: 'rollplane_analysis_threshold',
      help: "The number an analysis metric's condition compares its value with, by template and metric (draw it beside rollplane_analysis_value).",
      labelNames: ['template', 'metric'],
      registers: [registry],
    }),
    decisions: new Counter({
      name: 'rollplane_analysis_decisions_total',
      help: 'Analysis runs decided, by outcome: SUCCESSFUL, FAILED, INCONCLUSIVE, ERROR.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}

export function countDecision(metrics: AnalysisMetrics | undefined, outcome: AnalysisOutcome): void {
  metrics?.decisions.inc({ outcome });
}
