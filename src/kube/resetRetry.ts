import { AsyncLocalStorage } from 'node:async_hooks';
import type { ClientRequest } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';

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

/** The request an attempt put on the wire (noted by the agent, `noteRequests`), to ask whether its socket was a reused one. */
interface Attempt {
  request?: ClientRequest;
}

const attempts = new AsyncLocalStorage<Attempt>();

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

/**
 * Makes every agent of `kubeConfig` note the request it is given in the current attempt (all three doors of
 * client-node — typed APIs, Watch, the plain JSON path — get their agent from `createAgent`).
 */
export function noteRequests(kubeConfig: KubeConfig): void {
  const target = kubeConfig as unknown as { createAgent: (cluster: unknown, options: Record<string, unknown>) => unknown };
  const create = target.createAgent.bind(kubeConfig);
  const noted = new WeakSet<object>();
  target.createAgent = (cluster, options) => {
    const agent = create(cluster, options) as { addRequest(request: ClientRequest, options: unknown): void };
    if (noted.has(agent)) return agent;
    noted.add(agent);
    const addRequest = agent.addRequest.bind(agent);
    agent.addRequest = (request, requestOptions) => {
      addRequest(request, requestOptions);
      const attempt = attempts.getStore();
      if (attempt) attempt.request = request;
    };
    return agent;
  };
}

/** Whether `request` failed on a reset of a reused connection before any answer, and may be sent again. */
export function isResetOfReusedConnection(request: ClientRequest | undefined, error: unknown): boolean {
  return request?.reusedSocket === true && isConnectionReset(error);
}

/**
 * Sends `send` once; when it fails on a reset of a reused connection and the request is safe, takes `beforeRetry` (the
 * budget's token) and sends it once more. `send` must reject before an answer's body is read for the first failure to
 * count (a reset in the middle of an answer is not retried: the server answered).
 */
export async function sendRetryingReset<T>(method: string, url: string, send: () => Promise<T>, beforeRetry: () => Promise<void>): Promise<T> {
  const first: Attempt = {};
  try {
    return await attempts.run(first, send);
  } catch (error) {
    if (!isSafeToRetry(method, url) || !isResetOfReusedConnection(first.request, error)) throw error;
    await beforeRetry();
    return attempts.run({}, send);
  }
}
