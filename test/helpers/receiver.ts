import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { verifySignature } from '../../src/domain/notifications/signature.js';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Parsed JSON body (undefined when not JSON). */
  json: any;
  at: number;
  /** How many requests this path had got before this one. */
  n: number;
  /** The status it was answered, or 'hang' (held: the sender timed out, gave up or died). */
  answer?: number | 'hang';
}

/** What a path answers to its n-th request: a status (and body), or 'hang' (never answers; the sender times out). */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';
export type Behaviour = (request: Received) => Answer;

/**
 * A local HTTP receiver for notification tests: records every request, answers per path as told (200 by default),
 * checks webhook signatures and counts each CloudEvent id once (what a real receiver should do with at-least-once).
 */
export class Receiver {
  readonly requests: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly sockets = new Set<Socket>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const received: Received = { path, headers: req.headers, body, json, at: Date.now(), n: this.requests.filter((r) => r.path === path).length };
      this.requests.push(received);
      const answer: Answer = (this.behaviours.get(path) ?? (() => ({ status: 200 })))(received);
      received.answer = answer === 'hang' ? 'hang' : answer.status;
      if (answer === 'hang') {
        this.hanging.add(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  port = 0;

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    receiver.server.on('connection', (socket: Socket) => {
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string, behaviour: Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  at(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Requests to `path` whose signature verifies with `secret` (all of them, or the test fails on the first that does not). */
  verified(path: string, secret: string): Received[] {
    const got = this.at(path);
    for (const r of got) {
      const header = r.headers['x-rollplane-signature'];
      if (!verifySignature(secret, typeof header === 'string' ? header : undefined, r.body, Math.floor(r.at / 1000))) {
        throw new Error(`request ${r.n} to ${path} does not carry a valid signature: ${String(header)}`);
      }
    }
    return got;
  }

  /**
   * The CloudEvent ids that arrived at `path` (answered 2xx, or held: the receiver got the body), each once: what a
   * receiver that deduplicates on the id keeps. Requests it refused (non-2xx) did not arrive.
   */
  distinctIds(path: string): string[] {
    const arrived = this.at(path).filter((r) => r.answer === 'hang' || (typeof r.answer === 'number' && r.answer >= 200 && r.answer < 300));
    return [...new Set(arrived.map((r) => String(r.json?.id)))];
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
