import { AppError, ErrorCode, isAppError } from '../errors.js';

/** `details.reason` of every refusal found by a dry run before a rollout writes anything (issue 27). */
export const PREFLIGHT_REFUSED = 'PREFLIGHT_REFUSED';

/**
 * An API failure of a server-side dry run → the refusal: CONFLICT when something refused the write (a webhook denied
 * it, admission forbade it), UNAVAILABLE when nothing could answer (a webhook without endpoints or timing out, the API
 * server unreachable). The message is the API server's own; `details` say what was tried. A webhook that denies with
 * a 500 (the vm-dhcp webhook does) still refused: "denied the request" tells it from a webhook that could not be called.
 */
export function refusal(error: unknown, details: Record<string, unknown>): AppError {
  const message = (error as Error).message;
  const httpStatus = isAppError(error) ? (error.details.httpStatus as number | undefined) : undefined;
  const denied = message.includes('denied the request');
  const unanswered = message.includes('failed calling webhook') || (!denied && (httpStatus === undefined || httpStatus >= 500 || httpStatus === 429));
  return new AppError(unanswered ? ErrorCode.Unavailable : ErrorCode.Conflict, message, {
    cause: error,
    details: { reason: PREFLIGHT_REFUSED, ...details, ...(httpStatus !== undefined ? { httpStatus } : {}) },
  });
}
