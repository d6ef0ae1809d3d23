import type { ClientRequest } from 'node:http';

/**
 * A safe request that a reset of a kept-alive connection failed is sent once more (docs/adr/0073-member-request-retry.md).
 * A server closes an idle kept-alive connection when its own idle timeout passes (or its process pauses, or a proxy in
 * between drops it); a request the client wrote to that connection at the same instant is reset before the server read
 * it. Go's HTTP transport sends such a request again by itself when it is idempotent, and client-go's REST client
 * retries a GET on a connection reset; Node's agent does neither, so without this a member's list, probe or preflight
 * failed on a reset that says nothing about the member (the 300- and 1,000-cluster benches: members UNREACHABLE
 * together, and a bump refused by one "socket hang up").
 *
 * Sent again once, and only when all of these hold:
 * - the request is safe: GET or HEAD (a read, a list, discovery, a watch's establishment), or a dry run (`dryRun=All`:
 *   the API server runs admission and writes nothing). Never any other write — a create (POST), a merge patch (with or
 *   without a resourceVersion precondition), a replace (PUT), a delete: the reset may come after the server applied it,
 *   and a second one would create twice, or answer 409/404 for a write that landed. Those fail as before and their
 *   callers retry from what they read (the controllers' queues, the engine's next pass);
 * - the failure is a reset (ECONNRESET, "socket hang up", or EPIPE) before any answer arrived;
 * - the connection was a reused one (a fresh connection that is reset says something about the member: it is not
 *   asked again, so a member that resets everything costs one request per attempt, and is UNREACHABLE as before).
 * The retry takes a token of the same API budget and runs within the request's own timeout.
 */

/** Whether a request is safe to send twice: a read, or a dry run (nothing is written). */
export function isSafeToRetry(method: string, url: string): boolean {
  const verb = method.toUpperCase();
  if (verb === 'GET' || verb === 'HEAD') return true;
  const query = url.split('?')[1];
  return query !== undefined && new URLSearchParams(query).getAll('dryRun').includes('All');
}

/** A reset of the connection under the request: ECONNRESET ("socket hang up" carries it too) or EPIPE, on the error or its causes. */
export function isConnectionReset(error: unknown, depth = 0): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (code === 'ECONNRESET' || code === 'EPIPE') return true;
  return isConnectionReset(cause, depth + 1);
}

/** Whether `request` failed on a reset of a reused connection before any answer, and may be sent again. */
export function isResetOfReusedConnection(request: ClientRequest | undefined, error: unknown): boolean {
  return request?.reusedSocket === true && isConnectionReset(error);
}

/** Hands an attempt's caller the request it put on the wire, to ask afterwards whether its socket was a reused one. */
export type NoteRequest = (request: ClientRequest) => void;

/**
 * Sends `send` once; when it fails on a reset of a reused connection and the request is safe, takes `beforeRetry` (the
 * budget's token) and sends it once more. `send` notes the request it made (`note`), and must reject before an answer's
 * body is read for the first failure to count (a reset in the middle of an answer is not retried: the server answered).
 */
export async function sendRetryingReset<T>(method: string, url: string, send: (note: NoteRequest) => Promise<T>, beforeRetry: () => Promise<void>): Promise<T> {
  let first: ClientRequest | undefined;
  try {
    return await send((request) => {
      first = request;
    });
  } catch (error) {
    if (!isSafeToRetry(method, url) || !isResetOfReusedConnection(first, error)) throw error;
    await beforeRetry();
    return send(() => {});
  }
}
