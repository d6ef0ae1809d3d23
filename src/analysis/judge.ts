import { EvaluationError, evaluateCondition, NoDataSignal } from './condition.js';
import type { AnalysisOutcome, MeasurementVerdict } from './model.js';
import type { QueryResult } from './PrometheusClient.js';
import type { AnalysisMetric, BaselineComparison, NoDataPolicy } from './template.js';

/** What one answer of Prometheus says under a metric's conditions, before the noData policy. */
export interface Judgement {
  verdict: AnalysisOutcome | 'NO_DATA';
  values: number[];
  message: string | null;
}

/**
 * Argo Rollouts' rules for one measurement: with no condition, Successful; with only a success condition, Failed when
 * it is false; with only a failure condition, Successful when it is false; with both, Failed when the failure condition
 * holds (even if the success one does too), Successful when only the success one holds, Inconclusive when neither does.
 * rollplane's own: a vector with fewer series than `minSamples` (none, by default) and a comparison that met NaN are
 * no data, for the noData policy to decide (applyNoData).
 */
export function judge(metric: AnalysisMetric, answer: QueryResult): Judgement {
  const values = answer.type === 'scalar' ? [answer.value] : answer.samples.map((s) => s.value);
  if (answer.type === 'vector' && values.length < metric.minSamples) {
    const message =
      values.length === 0
        ? 'no data: the query returned no series'
        : `no data: the query returned ${values.length} series, fewer than minSamples (${metric.minSamples})`;
    return { verdict: 'NO_DATA', values, message };
  }
  const result = answer.type === 'scalar' ? answer.value : values;
  let success = false;
  let failure = false;
  try {
    if (metric.successCondition) success = evaluateCondition(metric.successCondition, result);
    if (metric.failureCondition) failure = evaluateCondition(metric.failureCondition, result);
  } catch (error) {
    if (error instanceof NoDataSignal) return { verdict: 'NO_DATA', values, message: `no data: ${error.message}` };
    if (error instanceof EvaluationError) return { verdict: 'ERROR', values, message: `the condition cannot be evaluated: ${error.message}` };
    throw error;
  }
  if (!metric.successCondition && !metric.failureCondition) return { verdict: 'SUCCESSFUL', values, message: null };
  if (!metric.failureCondition) failure = !success;
  if (!metric.successCondition) success = !failure;
  if (failure) return { verdict: 'FAILED', values, message: null };
  if (!success) return { verdict: 'INCONCLUSIVE', values, message: 'neither the success nor the failure condition holds' };
  return { verdict: 'SUCCESSFUL', values, message: null };
}

/**
 * The noData policy: FAIL, PASS and INCONCLUSIVE decide at once; WAIT(max) waits (the measurement is WAITING, not
 * counted, and taken again) until no data has lasted `max` since the first empty answer, then is INCONCLUSIVE.
 */
export function applyNoData(policy: NoDataPolicy, noDataSinceMs: number, nowMs: number): { verdict: MeasurementVerdict; because: string } {
  switch (policy.kind) {
    case 'FAIL':
      return { verdict: 'FAILED', because: 'noData: FAIL' };
    case 'PASS':
      return { verdict: 'SUCCESSFUL', because: 'noData: PASS' };
    case 'INCONCLUSIVE':
      return { verdict: 'INCONCLUSIVE', because: 'noData: INCONCLUSIVE' };
    case 'WAIT':
      return nowMs - noDataSinceMs < policy.maxMs
        ? { verdict: 'WAITING', because: `noData: WAIT(${policy.maxMs / 1000}s), waiting` }
        : { verdict: 'INCONCLUSIVE', because: `noData: WAIT(${policy.maxMs / 1000}s) ran out` };
  }
}

/** How a failed comparison's message begins (a resumed run recognises a critical failure by it). */
export const BASELINE_WORSE = 'worse than the baseline';

/** A measurement against its baseline: PASS, FAIL (moved the bad way beyond both bounds) or NO_DATA. */
export interface BaselineJudgement {
  outcome: 'PASS' | 'FAIL' | 'NO_DATA';
  baselineValues: number[];
  message: string;
}

/**
 * Compares the canary's first value with the baseline's first value (ADR 0061). NaN or an empty answer on either side
 * is no data — never a ratio; a baseline of 0 fails only by more than `minDelta`, so equal levels (0 and 0) pass.
 */
export function compareWithBaseline(comparison: BaselineComparison, canary: readonly number[], baseline: QueryResult): BaselineJudgement {
  const baselineValues = baseline.type === 'scalar' ? [baseline.value] : baseline.samples.map((s) => s.value);
  const c = canary[0];
  const b = baselineValues[0];
  if (c === undefined || b === undefined || Number.isNaN(c) || Number.isNaN(b)) {
    return { outcome: 'NO_DATA', baselineValues, message: `no data to compare: canary ${c ?? 'none'}, baseline ${b ?? 'none'}` };
  }
  const { direction, maxRatio, minDelta } = comparison;
  const worse = direction === 'increase' ? c > b * maxRatio && c - b > minDelta : c < b / maxRatio && b - c > minDelta;
  const ratio = b === 0 ? (c === 0 ? 1 : Number.POSITIVE_INFINITY) : c / b;
  const described = `canary ${c} vs baseline ${b} (ratio ${Number.isFinite(ratio) ? ratio.toFixed(3) : '∞'}, allowed ${direction} up to ${maxRatio}×${minDelta ? ` or ${minDelta}` : ''})`;
  return { outcome: worse ? 'FAIL' : 'PASS', baselineValues, message: `${worse ? BASELINE_WORSE : 'within the baseline'}: ${described}` };
}
