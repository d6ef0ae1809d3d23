import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import { applyCors } from './cors.js';
import { type ReadinessCheck, writeReadiness } from './health.js';
import { hostRefusal, type OriginPolicy } from './originPolicy.js';
import { sendError } from './sendError.js';

/** A part that serves some paths itself (the web UI). */
export interface PathHandler {
  handles(req: IncomingMessage, url: URL): boolean;
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
}

export interface RouterOptions {
  graphqlPath: string;
  /** Runs a GraphQL request over HTTP (Apollo). */
  graphql(req: IncomingMessage, res: ServerResponse, search: string): Promise<void>;
  /** The web UI (`/`, `/ui/*`) and, for a browser navigating to the GraphQL path, the playground. */
  ui: PathHandler;
  readiness: readonly ReadinessCheck[];
  /** While shutting down, /readyz answers 503 whatever the checks say. */
  isShuttingDown(): boolean;
  metrics: AppMetrics;
  /** Refreshes what /metrics counts at scrape time (from the store); when it fails, the scrape answers anyway. */
  beforeScrape(): Promise<void>;
  originPolicy: OriginPolicy;
  logger: Logger;
}

const CLIENT_GONE_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END', 'ERR_STREAM_PREMATURE_CLOSE']);

function isClientGone(error: unknown, req: IncomingMessage, res: ServerResponse): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && CLIENT_GONE_CODES.has(code)) || req.destroyed || res.destroyed;
}

/**
 * rollplane's HTTP routes — GraphQL, the web UI, /healthz, /readyz, /metrics — and what happens when a request fails
 * or a connection is malformed. WebSocket upgrades are not requests; the subscription server takes them.
 */
export function attachRoutes(server: Server, options: RouterOptions): void {
  const { logger, metrics, originPolicy } = options;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // No response of ours is meant to be sniffed into another type (a JSON error rendered as HTML, say).
    res.setHeader('x-content-type-options', 'nosniff');
    const refusedHost = hostRefusal(req, originPolicy);
    if (refusedHost) {
      metrics.requestsRefused.inc({ reason: 'host', transport: 'http' });
      return sendError(res, 421, refusedHost, 'BAD_REQUEST');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (options.ui.handles(req, url)) return options.ui.handle(req, res, url);
    if (applyCors(req, res, originPolicy.corsOrigins)) return;
    switch (url.pathname) {
      case options.graphqlPath:
        return options.graphql(req, res, url.search);
      case '/healthz':
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.end(JSON.stringify({ status: 'ok' }));
        return;
      case '/readyz':
        return writeReadiness(res, options.readiness, options.isShuttingDown());
      case '/metrics':
        await options.beforeScrape().catch((error: unknown) => logger.warn({ err: error }, 'cannot refresh the metrics counted at scrape time'));
        res.setHeader('content-type', metrics.registry.contentType);
        res.end(await metrics.members.render(metrics.registry));
        return;
      default:
        sendError(res, 404, `no route for ${url.pathname}`, 'NOT_FOUND');
    }
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((error) => {
      // A client that went away mid-response is routine (a closed tab, a CI job cancelled): not an error of ours.
      if (isClientGone(error, req, res)) logger.debug({ err: error, url: req.url }, 'client went away mid-request');
      else logger.error({ err: error, url: req.url }, 'request failed');
      if (!res.headersSent && !res.destroyed) sendError(res, 500, 'internal error; see the server log', 'INTERNAL_SERVER_ERROR');
      else res.destroy();
    });
  });
  // Malformed requests and resets before a request exists: answer 400 when possible, never log a stack for them.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    logger.debug({ err: error }, 'client connection error');
    if (socket.writable && error.code !== 'ECONNRESET' && error.code !== 'EPIPE') socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
}
