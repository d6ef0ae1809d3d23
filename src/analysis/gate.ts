import type { GateProgress } from '../domain/waves/progress.js';
import type { AnalysisRunRecord, MeasurementTally } from './model.js';
import { parseAnalysisTemplate } from './template.js';

/**
 * An analysis run as a staged run's gate (src/domain/waves/progress.ts), as issue 33 asks: Successful passes; Failed
 * fails (the run's failure policy follows, rollback among them); Inconclusive holds the run (`holds`: it pauses, with
 * the reason) until someone retries the gate or resumes the run to accept it; Error — Prometheus unreachable past
 * consecutiveErrorLimit — holds it too, unless the gate says errors fail. A run still measuring waits.
 */
export function analysisGateProgress(run: AnalysisRunRecord | undefined, options: { errorFails?: boolean } = {}): GateProgress {
  if (!run) return { state: 'WAITING', reason: 'analysis not started' };
  const why = run.message ? `: ${run.message}` : '';
  switch (run.phase) {
    case 'RUNNING':
      return { state: 'WAITING', reason: `analysis ${run.id} measuring` };
    case 'SUCCESSFUL':
      return { state: 'PASSED', reason: `analysis ${run.id} successful` };
    case 'FAILED':
      return { state: 'FAILED', reason: `analysis ${run.id} failed${why}` };
    case 'INCONCLUSIVE':
      return { state: 'WAITING', reason: `analysis ${run.id} inconclusive${why}; retry it or decide`, until: null, holds: true };
    case 'ERROR':
      return options.errorFails
        ? { state: 'FAILED', reason: `analysis ${run.id} errored${why}` }
        : { state: 'WAITING', reason: `analysis ${run.id} errored${why}; retry it or decide`, until: null, holds: true };
    case 'CANCELLED':
      // Never a pass, and never a failure that would set off a rollback: whoever cancelled it decides what follows. No
      // retry is offered: a run is cancelled when its rollout ends, and retryGate refuses an ended rollout's gates (and
      // a gate that neither failed nor holds) — attack 19, F10.
      return { state: 'WAITING', reason: `analysis ${run.id} cancelled${why}`, until: null };
  }
}

/** A gate's progress from its latest attempt, saying which attempt it is from the second on. */
export function latestAttemptProgress(latest: AnalysisRunRecord | undefined, options: { errorFails?: boolean } = {}): GateProgress {
  const progress = analysisGateProgress(latest, options);
  if (!latest || latest.attempt === 1) return progress;
  return { ...progress, reason: `attempt ${latest.attempt}: ${progress.reason}` };
}

/**
 * How far a run still measuring is, as `Rollout.waitingFor` says it: `measuring, 2 of 5 measurements` — counted as the
 * runner counts them (an error or a wait for data is measured again, not counted; a metric counts up to its `count`),
 * with `, waiting for data` while its latest measurement found none. From the second attempt on, it says which.
 */
export function measuringText(run: AnalysisRunRecord, tally: MeasurementTally): string {
  const metrics = parseAnalysisTemplate(run.template, run.args).metrics;
  const total = metrics.reduce((sum, metric) => sum + metric.count, 0);
  const taken = metrics.reduce((sum, metric) => sum + Math.min(metric.count, tally.decided.get(metric.name) ?? 0), 0);
  const latest = tally.latest;
  const attempt = run.attempt > 1 ? `attempt ${run.attempt}: ` : '';
  const waiting =
    latest?.verdict === 'WAITING' ? ', waiting for data' : latest?.verdict === 'ERROR' ? `, the latest errored (${latest.message ?? 'no message'})` : '';
  return `${attempt}measuring, ${taken} of ${total} measurement${total === 1 ? '' : 's'}${waiting}`;
}
