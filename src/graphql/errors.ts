import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { AppError, ErrorCode, isAppError } from '../errors.js';
import type { Logger } from '../log.js';
import { isDatabaseUnreachable } from '../util/databaseUnreachable.js';

/** What a client is told while the database cannot be reached: nothing was changed, retry later. */
export const DATABASE_UNREACHABLE_MESSAGE = 'the database cannot be reached right now (see /readyz); nothing was changed, retry later';

/**
 * The one place where errors become GraphQL errors. AppErrors keep their message and code (plus details such as the
 * offending `field`); GraphQL's own errors (parse, validation, bad variables) keep theirs; anything else is logged
 * and answered as INTERNAL_SERVER_ERROR without internals leaking to the client.
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown, logger: Logger): GraphQLFormattedError {
  let original = unwrapResolverError(error);
  // graphql-ws wraps what a subscription's event stream throws (a replay read while the database is down) in a
  // GraphQLError without a path, which Apollo's unwrap leaves as it is: look inside for an error we know.
  const inner = (original as { originalError?: unknown } | null)?.originalError;
  if (inner && (isAppError(inner) || isDatabaseUnreachable(inner))) original = inner;
  if (isAppError(original)) {
    // An outage's detail (which host, which port) is for the server's log; the client gets the message and the code.
    if (original.code === ErrorCode.Unavailable && original.cause !== undefined) logger.warn({ err: original.cause, path: formatted.path }, original.message);
    return {
      message: original.message,
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { ...original.details, code: original.code },
    };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && code !== ErrorCode.Internal) {
    return { ...formatted, extensions: { ...formatted.extensions, stacktrace: undefined } };
  }
  // (Apollo fills in INTERNAL_SERVER_ERROR for an error without a code before it calls this: look at the original.)
  if (isPlainGraphQLError(original) && !original.extensions?.code) {
    const field = invalidArgumentOf(formatted.message);
    return { ...formatted, extensions: { code: plainGraphQLErrorCode(original), ...(field ? { field } : {}) } };
  }
  if (isDatabaseUnreachable(original)) {
    // A down or restarting database is an outage, not a bug: logged once per request as a warning, answered UNAVAILABLE.
    logger.warn({ err: original, path: formatted.path }, 'the database cannot be reached');
    return {
      message: DATABASE_UNREACHABLE_MESSAGE,
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code: ErrorCode.Unavailable },
    };
  }
  if (isStorageFailure(original)) {
    logger.error({ err: original, path: formatted.path }, 'the database cannot be written');
    return {
      message: 'the database cannot be written right now (see /readyz); nothing was changed, retry later',
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code: ErrorCode.Unavailable },
    };
  }
  logger.error({ err: original, path: formatted.path }, 'unexpected error while executing GraphQL');
  return {
    message: 'internal error; see the server log',
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code: ErrorCode.Internal },
  };
}

/** Same mapping for graphql-ws, which hands us GraphQLError objects rather than formatted ones. */
export function formatGraphQLErrors(errors: readonly GraphQLError[], logger: Logger): GraphQLError[] {
  return errors.map((error) => {
    const formatted = formatError(error.toJSON(), error, logger);
    // `http` (status and headers for an HTTP response) is Apollo's internal detail; over WebSocket it means nothing.
    const { http: _http, ...extensions } = formatted.extensions ?? {};
    return new GraphQLError(formatted.message, {
      ...(error.nodes ? { nodes: error.nodes } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions,
    });
  });
}

export { AppError };

/**
 * For failures outside GraphQL execution (authenticating a request or a WebSocket before any operation runs): the
 * AppError the client should get — the error itself, UNAVAILABLE for an unreachable database — or undefined for an
 * internal error.
 */
export function clientErrorOf(error: unknown): AppError | undefined {
  if (isAppError(error)) return error;
  if (isDatabaseUnreachable(error)) return new AppError(ErrorCode.Unavailable, DATABASE_UNREACHABLE_MESSAGE, { cause: error });
  return undefined;
}

/** SQLite's "cannot write": disk full, read-only file or volume, I/O error. */
function isStorageFailure(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)/.test(e.code)) return true;
    if (typeof e.message === 'string' && /database or disk is full|disk I\/O error|attempt to write a readonly database/i.test(e.message)) return true;
  }
  return false;
}

/**
 * The code a GraphQL error will carry once formatted (formatError): its own extension, its AppError's code, the code of
 * a graphql-js error without one, or INTERNAL. The audit entry and the metrics record it, so it must be what the
 * client is told.
 */
export function errorCodeOf(error: { extensions?: Record<string, unknown> | undefined; originalError?: unknown }): string {
  const code = error.extensions?.code;
  if (typeof code === 'string') return code;
  const original = error.originalError;
  if (isAppError(original)) return original.code;
  if (isPlainGraphQLError(error)) return plainGraphQLErrorCode(error);
  // graphql-js wraps what a field raised (its arguments not coercing) in an error carrying the field's path, as
  // formatError's unwrapResolverError undoes: graphql-js's own error inside is coded like one raised outside.
  return isPlainGraphQLError(original) ? plainGraphQLErrorCode(original) : ErrorCode.Internal;
}

/**
 * A GraphQL-level error without a code: raised by graphql-js (a subscription's arguments; an argument whose value
 * does not coerce at execution, such as null through a nullable variable into a non-null input field) or by Apollo
 * itself for a malformed request (persisted-query extensions, answered 400): the request's fault.
 */
function plainGraphQLErrorCode(error: { extensions?: Record<string, unknown> }): string {
  const status = (error.extensions?.http as { status?: number } | undefined)?.status;
  return status !== undefined && status >= 400 && status < 500 ? 'BAD_REQUEST' : ErrorCode.BadUserInput;
}

/**
 * The argument graphql-js names when a value does not coerce at execution (`Argument "input" has invalid value …`),
 * as the `field` BAD_USER_INPUT errors carry. graphql-js gives only the argument, in its message, not the input field
 * within it.
 */
function invalidArgumentOf(message: string): string | undefined {
  return /^Argument "([_A-Za-z][_0-9A-Za-z]*)" has invalid value/.exec(message)?.[1];
}

/** Checked by shape: graphql may be loaded twice (CJS for Apollo, ESM elsewhere) and instanceof fails across the two. */
function isPlainGraphQLError(error: unknown): error is { extensions?: Record<string, unknown>; originalError?: unknown } {
  return (
    (error instanceof GraphQLError || (typeof error === 'object' && error !== null && (error as Error).name === 'GraphQLError' && 'extensions' in error)) &&
    (error as { originalError?: unknown }).originalError == null
  );
}
