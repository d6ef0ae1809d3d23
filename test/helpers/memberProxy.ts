import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A member cluster's front door for tests: an HTTP proxy on 127.0.0.1:0 to a simulator that can be switched to
 * answer 401 to everything (credentials revoked) or to accept connections and never answer (a black hole), and
 * counts the requests it saw and the Authorization headers they carried. `intercept` lets a test answer some requests
 * itself (a list answering 404, 500, or carrying objects a kube-apiserver never sends).
 */
export interface MemberProxy {
  readonly url: string;
  mode: 'pass' | 'unauthorized' | 'blackhole';
  /** Requests that reached the proxy so far. */
  readonly requests: number;
  /** TCP connections open to the proxy now, and accepted so far. */
  readonly openConnections: number;
  readonly connections: number;
  readonly authorizations: Set<string>;
  close(): Promise<void>;
}

/** Passes the request on; with `rewrite`, the upstream's answer body is read whole and replaced by what it returns. */
export type Forward = (rewrite?: (body: string) => string) => void;

export interface MemberProxyOptions {
  /**
   * Sees each request in `pass` mode first: answers it itself (`res`), forwards it (`forward`, optionally rewriting the
   * answer) or leaves it unanswered, and returns true; false lets the proxy pass it on as usual.
   */
  intercept?(req: IncomingMessage, res: ServerResponse, forward: Forward): boolean;
}

/** A Kubernetes `Status` answer with `code` and `reason`. */
export function answerStatus(res: ServerResponse, code: number, reason: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: reason, reason, code }));
}

export async function startMemberProxy(target: string, options: MemberProxyOptions = {}): Promise<MemberProxy> {
  const sockets = new Set<Socket>();
  const state = { mode: 'pass' as MemberProxy['mode'], requests: 0, authorizations: new Set<string>() };
  const forward = (req: IncomingMessage, res: ServerResponse, rewrite?: (body: string) => string) => {
    const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      if (!rewrite) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const body = rewrite(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server: Server = createServer((req, res) => {
    state.requests++;
    if (req.headers.authorization) state.authorizations.add(req.headers.authorization);
    if (state.mode === 'blackhole') return; // never answered; the socket is destroyed on close
    if (state.mode === 'unauthorized') return answerStatus(res, 401, 'Unauthorized');
    if (options.intercept?.(req, res, (rewrite) => forward(req, res, rewrite))) return;
    forward(req, res);
  });
  // Idle keep-alive connections stay until the client closes them, so a test sees whether it does.
  server.keepAliveTimeout = 0;
  let accepted = 0;
  server.on('connection', (socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get mode() {
      return state.mode;
    },
    set mode(mode) {
      state.mode = mode;
    },
    get requests() {
      return state.requests;
    },
    get openConnections() {
      return sockets.size;
    },
    get connections() {
      return accepted;
    },
    authorizations: state.authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
