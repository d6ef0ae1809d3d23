import { UnavailableError } from '../errors.js';

/** Why analysis cannot measure at all: no Prometheus binary for a local one, or none started. */
export type AnalysisUnavailableReason = 'PROMETHEUS_NOT_INSTALLED' | 'PROMETHEUS_DID_NOT_START' | 'PROMETHEUS_NOT_CONFIGURED';

/** Analysis cannot run here (code UNAVAILABLE, `details.reason` says why); nothing was measured or decided. */
export class AnalysisUnavailableError extends UnavailableError {
  readonly reason: AnalysisUnavailableReason;

  constructor(reason: AnalysisUnavailableReason, message: string) {
    super(`analysis unavailable: ${message}`, { details: { reason } });
    this.reason = reason;
  }
}
