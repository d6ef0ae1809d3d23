import { AppError, ErrorCode } from '../errors.js';

/**
 * The CLI's exit codes, a contract with CI pipelines (documented in docs/ci.md):
 * 0 the rollout succeeded (or the command did what it was asked), 1 it failed, was aborted or rolled back (or the
 * server refused the request), 2 a usage error or `--wait` timed out, 3 the server is unreachable or refused the token.
 */
export const ExitCode = {
  Ok: 0,
  Failed: 1,
  Usage: 2,
  Timeout: 2,
  Unreachable: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A refusal reported by the server (a GraphQL error with `extensions.code`). */
export class RemoteError extends AppError {
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
  }
}

/** The server could not be reached (connection refused, DNS, TLS, 5xx or 429 after every retry). */
export class UnreachableError extends AppError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(ErrorCode.Unavailable, message, options);
  }
}

/** `--wait` gave up; the rollout goes on on the server. */
export class WaitTimeoutError extends AppError {
  constructor(
    message: string,
    readonly rollout: unknown,
  ) {
    super(ErrorCode.Unavailable, message, { details: { timeout: true } });
  }
}

/** The exit code for an error that ended a command. */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof WaitTimeoutError) return ExitCode.Timeout;
  if (error instanceof UnreachableError) return ExitCode.Unreachable;
  if (error instanceof AppError) {
    switch (error.code) {
      case ErrorCode.BadUserInput:
        return ExitCode.Usage;
      case ErrorCode.Unauthenticated:
      case ErrorCode.Forbidden:
      case ErrorCode.Unavailable:
      case ErrorCode.RateLimited:
        return ExitCode.Unreachable;
      case ErrorCode.NotFound:
      case ErrorCode.Conflict:
      case ErrorCode.NotImplemented:
      case ErrorCode.Internal:
        return ExitCode.Failed;
    }
  }
  return ExitCode.Failed;
}
