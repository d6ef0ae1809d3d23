import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { TargetRefusedError, type TargetGuard } from './targetGuard.js';

/** The most of a sink's answer ever read: enough for Slack's JSON (its `ts`), never kept beyond a short prefix. */
export const MAX_RESPONSE_BYTES = 16 * 1024;

export interface HttpAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The start of the body (at most MAX_RESPONSE_BYTES), as text. */
  body: string;
}

/**
 * Connections kept open between deliveries to the same sink: a webhook receiving a rollout's events gets them over a
 * few connections instead of one TCP (and TLS) handshake each. Reuse is safe for the SSRF guard: a connection's address
 * was checked when it was made (lookup and socket), and an open connection cannot be moved to another address.
 */
export interface SinkAgents {
  http: HttpAgent;
  https: HttpsAgent;
  destroy(): void;
}

export function sinkAgents(): SinkAgents {
  const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 8, timeout: 60_000 };
  const http = new HttpAgent(options);
  const https = new HttpsAgent(options);
  return {
    http,
    https,
    destroy() {
      http.destroy();
      https.destroy();
    },
  };
}

/**
 * One POST to a sink, bounded in every way a receiver could stretch it: the whole exchange (connect, TLS, headers,
 * body) ends at `timeoutMs`, the answer is read up to MAX_RESPONSE_BYTES, redirects are not followed, a new
 * connection resolves its name through the guard (and its address is checked once connected; a reused one is checked
 * again), and the signal aborts it at once (the leader stepping down). Without `agents`, no connection is reused.
 * Throws with a short message on any failure before an HTTP status arrived.
 */
export function postOnce(
  guard: TargetGuard,
  url: URL,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; signal: AbortSignal; agents?: SinkAgents },
): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const payload = Buffer.from(body, 'utf8');
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const finish = (error: Error | undefined, answer?: HttpAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve(answer!);
    };
    const req = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      lookup: guard.lookup,
      agent: options.agents ? (url.protocol === 'https:' ? options.agents.https : options.agents.http) : false,
      // An IP literal is connected to without a lookup: the guard checked it before (check), and the socket is
      // checked again below.
    });
    const timer = setTimeout(() => req.destroy(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = () => req.destroy(new Error('aborted: this replica stopped delivering'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    req.on('socket', (socket: Socket) => {
      const checkAddress = () => {
        const address = socket.remoteAddress;
        if (address === undefined || !guard.isAllowedAddress(address)) {
          req.destroy(new TargetRefusedError(`connected to ${address ?? 'an unknown address'}, which is not allowed`));
        }
      };
      // A kept-alive connection is connected already (and the operator's allowance may have changed since).
      if (socket.connecting || socket.remoteAddress === undefined) socket.once('connect', checkAddress);
      else checkAddress();
    });
    req.on('error', (error) => finish(new Error(shortError(error), { cause: error })));
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () =>
        finish(undefined, { statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8').slice(0, MAX_RESPONSE_BYTES) });
      res.on('data', (chunk: Buffer) => {
        if (size >= MAX_RESPONSE_BYTES) return;
        chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
        size += chunk.length;
        // Enough read: the rest is never waited for (a sink streaming forever cannot hold the delivery).
        if (size >= MAX_RESPONSE_BYTES) {
          done();
          res.destroy();
        }
      });
      res.on('end', done);
      // The answer broke off after its status: what arrived is the answer.
      res.on('error', done);
    });
    req.end(payload);
  });
}

/** A failure as one line without the URL (which may carry a secret path, as Slack's webhooks do). */
function shortError(error: Error & { code?: string }): string {
  if (error instanceof TargetRefusedError) return error.message;
  if (error.message.startsWith('timed out') || error.message.startsWith('aborted') || error.message.startsWith('connected to')) return error.message;
  return error.code ? `${error.code}${error.code === 'ECONNREFUSED' ? ': connection refused' : ''}` : error.message.slice(0, 200);
}
