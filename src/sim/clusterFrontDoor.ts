/**
 * A simulated cluster's front door (docs/adr/0050-simulated-member-clusters.md): the address clients are given, an
 * HTTP proxy on its own port to the cluster's API server, that can be switched at run time to behave as a member
 * cluster does when something is wrong with it:
 * - `ready`: every request goes through;
 * - `unreachable`: the port is closed (connections are refused, ECONNREFUSED) and open connections are cut;
 * - `blackhole`: connections are accepted and requests are never answered (a firewall that drops, a hung apiserver);
 * - `slow`: every request waits `latencyMs` before it goes through (watch streams then flow as usual);
 * - `unauthorized`: every request is answered 401 with a Kubernetes Status (credentials revoked).
 * The state applies to each request as it arrives, so a client's keep-alive connection sees the change at once.
 */
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { API_SERVER_KEEP_ALIVE_MS } from './api/ApiServer.js';

export const CLUSTER_STATES = ['ready', 'unreachable', 'blackhole', 'slow', 'unauthorized'] as const;
export type ClusterState = (typeof CLUSTER_STATES)[number];

export interface FrontDoorState {
  state: ClusterState;
  /** The added latency in `slow` (ms); 0 otherwise. */
  latencyMs: number;
}

const UNAUTHORIZED = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'Unauthorized',
  reason: 'Unauthorized',
  code: 401,
});

/** The front door's idle connections to its API server are closed after this long: 5 s below the server's own. */
export const UPSTREAM_IDLE_MS = API_SERVER_KEEP_ALIVE_MS - 5_000;

export class ClusterFrontDoor {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** Requests held unanswered by the black hole, cut when it ends so that their clients reconnect. */
  private readonly held = new Set<ServerResponse>();
  /**
   * Its kept-alive connections to the API server, each closed after `upstreamIdleMs` idle: below the API server's own
   * idle timeout (API_SERVER_KEEP_ALIVE_MS), so the front door never hands a request a connection the server is closing
   * at that instant (a reset the bench saw over 1,000 members). Node's agent honours a server's `Keep-Alive: timeout`
   * hint only below a timeout of its own, and has none by default: its idle sockets waited for the server to close them.
   */
  private readonly agent: Agent;
  private current: FrontDoorState = { state: 'ready', latencyMs: 0 };
  private port = 0;
  private listening = false;

  constructor(
    private readonly backend: string,
    private readonly host = '127.0.0.1',
    options: { upstreamIdleMs?: number } = {},
  ) {
    this.agent = new Agent({ keepAlive: true, maxFreeSockets: 4, timeout: options.upstreamIdleMs ?? UPSTREAM_IDLE_MS });
    // Idle connections kept as long as the API server behind keeps them. Node's default 5 s closed kept-alive
    // connections under clients that were about to reuse them: requests reset (ECONNRESET) that a real kube-apiserver
    // would have taken — the 300-cluster bench's members flapped UNREACHABLE on them.
    this.server = createServer({ keepAliveTimeout: API_SERVER_KEEP_ALIVE_MS }, (req, res) => this.serve(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Listens on `port` (0: any free one) and returns the URL clients use. */
  async start(port = 0): Promise<string> {
    await this.listen(port);
    this.port = (this.server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  state(): FrontDoorState {
    return { ...this.current };
  }

  /** Switches the state; resolves once the port is closed or open again as the state needs. */
  async set(state: ClusterState, latencyMs = 0): Promise<FrontDoorState> {
    const previous = this.current.state;
    this.current = { state, latencyMs: state === 'slow' ? latencyMs : 0 };
    if (previous === 'blackhole' && state !== 'blackhole') this.releaseHeld();
    if (state === 'unreachable' && this.listening) await this.close();
    if (state !== 'unreachable' && !this.listening) await this.listen(this.port);
    return this.state();
  }

  async stop(): Promise<void> {
    this.releaseHeld();
    if (this.listening) await this.close();
    this.agent.destroy();
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const { state, latencyMs } = this.current;
    if (state === 'blackhole') {
      this.held.add(res);
      res.on('close', () => this.held.delete(res));
      return;
    }
    if (state === 'unauthorized') {
      res.writeHead(401, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(UNAUTHORIZED) }).end(UNAUTHORIZED);
      return;
    }
    if (state === 'slow' && latencyMs > 0) {
      const timer = setTimeout(() => this.forward(req, res), latencyMs);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    this.forward(req, res);
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    if (res.destroyed) return;
    const upstream = request(`${this.backend}${req.url}`, { method: req.method, headers: req.headers, agent: this.agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    // A client that goes away (a watch it ends, a request it aborts) ends the request to the API server too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  private releaseHeld(): void {
    for (const res of this.held) res.destroy();
    this.held.clear();
  }

  private listen(port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, this.host, () => {
        this.server.off('error', reject);
        this.listening = true;
        resolve();
      });
    });
  }

  private close(): Promise<void> {
    this.listening = false;
    return new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }
}
