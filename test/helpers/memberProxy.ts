import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A member cluster's front door for tests: an HTTP proxy on 127.0.0.1:0 to a simulator that can be switched to
 * answer 401 to everything (credentials revoked) or to accept connections and never answer (a black hole), and
 * counts the requests it saw and the Authorization headers they carried.
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

export async function startMemberProxy(target: string): Promise<MemberProxy> {
  const sockets = new Set<Socket>();
  const state = { mode: 'pass' as MemberProxy['mode'], requests: 0, authorizations: new Set<string>() };
  const server: Server = createServer((req, res) => {
    state.requests++;
    if (req.headers.authorization) state.authorizations.add(req.headers.authorization);
    if (state.mode === 'blackhole') return; // never answered; the socket is destroyed on close
    if (state.mode === 'unauthorized') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }));
      return;
    }
    const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
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
