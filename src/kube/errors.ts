import { ApiException } from '@kubernetes/client-node';
import { AppError, ConflictError, ErrorCode, NotFoundError, UnavailableError, isAppError } from '../errors.js';

/**
 * Kubernetes API failures become AppErrors here and nowhere else:
 * 404 → NotFoundError · 409 → ConflictError (re-read and retry) · 410 → ResourceExpiredError (relist) ·
 * 429 / 5xx / network failures → UnavailableError (retry with backoff) · anything else → AppError with the Status
 * message. `details` carries the HTTP status and the Status reason.
 */

/** The resourceVersion a list or watch asked for is older than the server keeps (HTTP 410 Gone): relist. */
export class ResourceExpiredError extends AppError {
  constructor(message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(ErrorCode.Conflict, message, options);
  }
}

/** The parts of a Kubernetes `Status` object we use. */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
}

/** Parses a `Status` out of an ApiException body (a JSON string, or an already parsed object). */
export function statusOf(body: unknown): KubeStatus | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.trim() ? { message: body.trim() } : undefined;
    }
  }
  if (parsed && typeof parsed === 'object') return parsed as KubeStatus;
  return undefined;
}

/** HTTP status of a client-node failure: ApiException.code, a Watch error's statusCode, or a Status of an ERROR event. */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (error && typeof error === 'object') {
    const e = error as { code?: unknown; statusCode?: unknown; kind?: unknown };
    if (typeof e.statusCode === 'number') return e.statusCode;
    if (e.kind === 'Status' && typeof e.code === 'number') return e.code;
  }
  return undefined;
}

/** Translates any error thrown by client-node into an AppError; AppErrors pass through unchanged. */
export function translateKubeError(error: unknown, what = 'Kubernetes API call'): AppError {
  if (isAppError(error)) return error;
  const code = httpStatusOf(error);
  const status =
    error instanceof ApiException
      ? statusOf(error.body)
      : error && typeof error === 'object' && (error as KubeStatus).kind === 'Status'
        ? (error as KubeStatus)
        : undefined;
  const reason = status?.reason;
  const message = `${what}: ${status?.message || (error instanceof Error ? error.message : String(error))}`;
  const options = { cause: error, details: { httpStatus: code, reason } };
  if (code === undefined) return new UnavailableError(message, options); // network failure, reset, timeout
  if (code === 404) return new NotFoundError(message, options);
  if (code === 409) return new ConflictError(message, options);
  if (code === 410) return new ResourceExpiredError(message, options);
  if (code === 429 || code >= 500) return new UnavailableError(message, options);
  if (code === 400 || code === 422) return new AppError(ErrorCode.BadUserInput, message, options);
  if (code === 401) return new AppError(ErrorCode.Unauthenticated, message, options);
  if (code === 403) return new AppError(ErrorCode.Forbidden, message, options);
  return new AppError(ErrorCode.Internal, message, options);
}

/** Whether retrying (after re-reading, for conflicts) may succeed. */
export function isRetriable(error: unknown): boolean {
  return error instanceof ConflictError || error instanceof UnavailableError || error instanceof ResourceExpiredError;
}

/** Runs a client-node call and translates its failure. */
export async function kubeCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw translateKubeError(error, what);
  }
}

/**
 * Whether a write that failed with `error` may still have been made: no answer came (a network failure, a reset, the
 * request's own timeout), or the API server answered 504, which it does when its own timeout passes while the request
 * may still commit. Any other answer is definite: the write was not made.
 */
export function writeOutcomeUnknown(error: unknown): boolean {
  if (!isAppError(error) || !('httpStatus' in error.details)) return false;
  const status = error.details.httpStatus;
  return status === undefined || status === 504;
}
