import { AppError, type AppErrorOptions, ErrorCode, isAppError } from '../errors.js';

/**
 * A reconcile error that retrying cannot fix (controller-runtime's reconcile.TerminalError): the controller records
 * it (last error per key, terminal error metric) and forgets the key instead of requeueing it. The key is reconciled
 * again only when something enqueues it anew (a watch event, a resync).
 */
export class TerminalError extends AppError {
  constructor(message: string, options: AppErrorOptions & { code?: ErrorCode } = {}) {
    super(options.code ?? (isAppError(options.cause) ? options.cause.code : ErrorCode.Internal), message, options);
  }

  /** Marks `error` terminal, keeping it as the cause and its message. */
  static wrap(error: unknown): TerminalError {
    if (error instanceof TerminalError) return error;
    return new TerminalError(describeError(error), { cause: error });
  }
}

/** True when `error` or anything on its `cause` chain is a TerminalError (errors.Is semantics). */
export function isTerminalError(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 16; depth++) {
    if (e instanceof TerminalError) return true;
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}

/** A message for any thrown value, including non-Errors (`throw 'x'`, `throw undefined`). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  if (error === undefined) return 'undefined was thrown';
  try {
    return `non-Error thrown: ${JSON.stringify(error)}`;
  } catch {
    return `non-Error thrown: ${String(error)}`;
  }
}
