/**
 * Whether an error means "the database cannot be reached right now" (down, restarting, refusing or dropping
 * connections) rather than a fault of the request or of rollplane. Such a failure is answered UNAVAILABLE (retry
 * later), never INTERNAL_SERVER_ERROR. It recognises the shapes a PostgreSQL outage takes in pg (the history port's
 * pool, the LISTEN connection; the only PostgreSQL driver at run time since Prisma left it), possibly wrapped in
 * `cause` a few levels deep: a socket error code (ECONNREFUSED …), a server error code (class 08 connection
 * exception; 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; 53300 too_many_connections; the
 * login refusals below), or pg's own messages for a connection that ended or timed out, or for a query the server
 * did not answer at all within the pool's query timeout (store/postgres/pool.ts), which carry no code. SQLite
 * (better-sqlite3) has no server to lose: its errors are never an outage here.
 *
 * Login refusals: PostgreSQL is up but will not let rollplane's role in. The operator (or an expiry) took the service's
 * access away, which neither the request nor rollplane can fix and which ends when the access is given back: the same
 * "retry later" as a server that is down. PostgreSQL raises these while it opens a connection, and rollplane's own
 * queries (no CREATE/DROP DATABASE at run time) never raise them on an open one, so no fault of a request hides here:
 * - 28000 invalid_authorization_specification: `ALTER ROLE … NOLOGIN`, a pg_hba.conf `reject` line;
 * - 28P01 invalid_password: the password changed or its VALID UNTIL passed (a rotated secret not deployed yet);
 * - 3D000 invalid_catalog_name: the database was dropped or renamed under the running service;
 * - a role's or database's CONNECTION LIMIT is 53300, above.
 * Two more share their code with errors a query can raise (55000 object_not_in_prerequisite_state, 42501
 * insufficient_privilege), so they count only with their connection-time message (CODES_BY_MESSAGE): "database … is
 * not currently accepting connections" (`ALTER DATABASE … ALLOW_CONNECTIONS false`) and "permission denied for
 * database …" (`REVOKE CONNECT`).
 */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '28000', '28P01', '3D000']);
const MESSAGES =
  /Connection terminated|Query read timeout|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|terminating connection due to administrator command|the database system is (shutting down|starting up|in recovery mode)/i;
/** Codes a query can raise too: an outage only with the message PostgreSQL gives them when it refuses a login. */
const CODES_BY_MESSAGE = new Map([
  ['55000', /is not currently accepting connections/i],
  ['42501', /permission denied for database/i],
]);

const MAX_DEPTH = 6;

function isUnreachableCode(code: unknown): boolean {
  return typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

/** The fields of a pg error that tell an outage. */
interface DriverError {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The code of a login refusal known by its code and message. */
function refusalByMessage(e: DriverError): string | undefined {
  return typeof e.code === 'string' && typeof e.message === 'string' && CODES_BY_MESSAGE.get(e.code)?.test(e.message) ? e.code : undefined;
}

export function isDatabaseUnreachable(error: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return false;
  const e = error as DriverError;
  if (isUnreachableCode(e.code) || refusalByMessage(e)) return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  return isDatabaseUnreachable(e.cause, depth + 1);
}

/** The first code that says why the database is unreachable (ECONNREFUSED, 57P01, …), if the error has one. */
export function unreachableCode(error: unknown, depth = 0): string | undefined {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return undefined;
  const e = error as DriverError;
  if (isUnreachableCode(e.code)) return e.code as string;
  return refusalByMessage(e) ?? unreachableCode(e.cause, depth + 1);
}

/**
 * What a client (possibly unauthenticated: /readyz, a 503) is told of an unreachable database: that it is, and the
 * code, never the driver's message, which names the database's host and port (`connect ECONNREFUSED 10.0.0.5:5432`).
 * The detail stays in the error's `cause`, for the server's log.
 */
export function databaseUnreachableMessage(error: unknown): string {
  const code = unreachableCode(error);
  return `the database is unreachable${code ? ` (${code})` : ''}`;
}
