/**
 * Whether an error means "the database cannot be reached right now" (down, restarting, refusing or dropping
 * connections) rather than a fault of the request or of rollplane. Such a failure is answered UNAVAILABLE (retry
 * later), never INTERNAL_SERVER_ERROR. It recognises the three shapes a PostgreSQL outage takes here:
 * - pg (the history port's pool, the LISTEN connection): a socket error code (ECONNREFUSED …), a server error code
 *   (class 08 connection exception; 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; 53300
 *   too_many_connections), or pg's own messages for a connection that ended or timed out, which carry no code;
 * - Prisma through @prisma/adapter-pg: a known request error P1001 (cannot reach), P1002/P1008 (timed out), P1017
 *   (server closed the connection), P2024 (pool timeout), P2037 (too many connections); or, for server codes the
 *   adapter does not translate (57P01 …), a DriverAdapterError whose `cause` holds the original code;
 * - any of these wrapped (`cause`, Prisma's `meta.driverAdapterError`), a few levels deep.
 */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Can't reach database server|Server has closed the connection|terminating connection due to administrator command|the database system is (shutting down|starting up|in recovery mode)/i;

const MAX_DEPTH = 6;

function isUnreachableCode(code: unknown): boolean {
  return typeof code === 'string' && (PRISMA_CODES.has(code) || SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

export function isDatabaseUnreachable(error: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; originalCode?: unknown; kind?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
  if (isUnreachableCode(e.code) || isUnreachableCode(e.originalCode)) return true;
  if (typeof e.kind === 'string' && ADAPTER_KINDS.has(e.kind)) return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  return isDatabaseUnreachable(e.cause, depth + 1) || isDatabaseUnreachable(e.meta?.driverAdapterError, depth + 1);
}

/** The first code that says why the database is unreachable (ECONNREFUSED, 57P01, P1001, …), if the error has one. */
export function unreachableCode(error: unknown, depth = 0): string | undefined {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return undefined;
  const e = error as { code?: unknown; originalCode?: unknown; kind?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
  for (const code of [e.code, e.originalCode]) if (isUnreachableCode(code)) return code as string;
  if (typeof e.kind === 'string' && ADAPTER_KINDS.has(e.kind)) return e.kind;
  return unreachableCode(e.cause, depth + 1) ?? unreachableCode(e.meta?.driverAdapterError, depth + 1);
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
