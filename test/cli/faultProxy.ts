import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with the n-th request (from 1). */
export type Fault =
  | { kind: 'forward' }
  /** Forwards the request, lets the server apply it, then cuts the client's connection without an answer. */
  | { kind: 'lose-response' }
  | { kind: 'answer'; status: number; headers?: Record<string, string>; body: unknown };

export interface FaultProxy {
  url: string;
  /** Request bodies seen, in order (parsed JSON). */
  requests: { query: string; variables: Record<string, any> }[];
  close(): Promise<void>;
}

/** An HTTP proxy in front of the GraphQL endpoint that injects the faults a CI runner meets on the way (and refuses WebSockets). */
export async function startFaultProxy(target: string, faultFor: (n: number) => Fault): Promise<FaultProxy> {
  const requests: FaultProxy['requests'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      requests.push(JSON.parse(body || '{}'));
      const fault = faultFor(requests.length);
      if (fault.kind === 'answer') {
        res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
        res.end(JSON.stringify(fault.body));
        return;
      }
      const headers = { ...req.headers };
      delete headers.host;
      const upstream = http.request(target, { method: req.method, headers }, (answer) => {
        if (fault.kind === 'lose-response') {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => req.socket.destroy());
      upstream.end(body);
    });
  });
  // Like many HTTP-only proxies: WebSocket upgrades are refused.
  server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
