/**
 * The one error hierarchy of rollplane. Every failure that reaches a user is an AppError with a code; the GraphQL
 * layer maps the code to `extensions.code` in exactly one place (src/graphql/errors.ts). Never throw strings.
 */
export const ErrorCode = {
  BadUserInput: 'BAD_USER_INPUT',
  NotFound: 'NOT_FOUND',
  Conflict: 'CONFLICT',
  Unauthenticated: 'UNAUTHENTICATED',
  Forbidden: 'FORBIDDEN',
  RateLimited: 'RATE_LIMITED',
  NotImplemented: 'NOT_IMPLEMENTED',
  Unavailable: 'UNAVAILABLE',
  Internal: 'INTERNAL_SERVER_ERROR',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface AppErrorOptions {
  cause?: unknown;
  /** Extra machine-readable detail, copied into GraphQL `extensions`. */
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details ?? {};
  }
}

/** Input failed validation; `field` is the path of the offending input field (e.g. `input.image`). */
export class ValidationError extends AppError {
  constructor(field: string, reason: string, options: AppErrorOptions = {}) {
    super(ErrorCode.BadUserInput, `${field}: ${reason}`, { ...options, details: { field, ...options.details } });
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super(ErrorCode.NotFound, message, options);
  }
}

/** A concurrent or contradictory change; retrying after re-reading may succeed. */
export class ConflictError extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super(ErrorCode.Conflict, message, options);
  }
}

/** The feature is part of the API contract but not backed yet; see the README's "Not yet backed" section. */
export class NotImplementedError extends AppError {
  constructor(feature: string) {
    super(ErrorCode.NotImplemented, `${feature} is not available yet in this version of rollplane`, {
      details: { feature },
    });
  }
}

/** The caller is known but its role does not allow this. */
export class ForbiddenError extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super(ErrorCode.Forbidden, message, options);
  }
}

/** A dependency (database, Kubernetes API) cannot be reached right now. */
export class UnavailableError extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super(ErrorCode.Unavailable, message, options);
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
