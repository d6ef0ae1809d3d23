import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { projectPath } from '../util/projectRoot.js';

/** URL prefix of the built assets (must match `base` in src/ui/client/vite.config.ts). */
export const UI_ASSET_PREFIX = '/ui/';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.ttf': 'font/ttf',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

/**
 * Nothing the pages load may come from another origin (air-gapped clusters), and no other site may frame them. Monaco
 * (in the playground) injects style elements and may start workers from `blob:` URLs; no script is inline or eval'd.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

export interface UiHandler {
  /** Whether this request is the UI's: `/`, `/ui/*`, or a browser navigating to the GraphQL path (the playground). */
  handles(req: IncomingMessage, url: URL): boolean;
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
}

export interface UiHandlerOptions {
  /** Where the GraphQL endpoint is mounted; a browser navigating there gets the playground. */
  graphqlPath: string;
  /** The built assets (`npm run build:ui`); default `<package root>/dist/ui`. */
  assetsDir?: string;
}

/**
 * Serves the web UI and the GraphQL playground from the Vite build in `dist/ui`. Hashed assets are cached for a year;
 * the two HTML entry points never. When the UI has not been built, answers 503 saying how to build it rather than
 * failing the server.
 */
export function createUiHandler(options: UiHandlerOptions): UiHandler {
  const assetsDir = path.resolve(options.assetsDir ?? projectPath('dist', 'ui'));

  return {
    handles(req, url) {
      if (url.pathname === '/' || url.pathname.startsWith(UI_ASSET_PREFIX)) return true;
      return url.pathname === options.graphqlPath && isBrowserNavigation(req, url);
    },
    async handle(req, res, url) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.statusCode = 405;
        res.setHeader('allow', 'GET, HEAD');
        res.end();
        return;
      }
      if (url.pathname === '/') return sendHtml(req, res, assetsDir, 'index.html');
      if (url.pathname === options.graphqlPath) return sendHtml(req, res, assetsDir, 'playground.html');
      return sendAsset(req, res, assetsDir, url.pathname.slice(UI_ASSET_PREFIX.length));
    },
  };
}

/**
 * A browser typing the URL: GET, asks for HTML, and carries no GraphQL query. Clients that run GraphQL over GET send
 * `query=` and (for Apollo's CSRF prevention) a JSON content type or a preflight header, so they still reach Apollo.
 */
function isBrowserNavigation(req: IncomingMessage, url: URL): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (url.searchParams.has('query') || url.searchParams.has('extensions')) return false;
  return (req.headers.accept ?? '').includes('text/html');
}

async function sendHtml(req: IncomingMessage, res: ServerResponse, dir: string, file: string): Promise<void> {
  const full = path.join(dir, file);
  if (!existsSync(full)) {
    res.statusCode = 503;
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end(`The web UI is not built (${full} is missing). Run \`npm run build:ui\` (npm install and npm start do it).\n`);
    return;
  }
  const body = await readFile(full);
  res.statusCode = 200;
  res.setHeader('content-type', CONTENT_TYPES['.html']!);
  res.setHeader('cache-control', 'no-cache');
  setSecurityHeaders(res);
  res.end(req.method === 'HEAD' ? undefined : body);
}

async function sendAsset(req: IncomingMessage, res: ServerResponse, dir: string, relative: string): Promise<void> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(relative);
  } catch {
    return notFound(res);
  }
  const full = path.resolve(dir, decoded);
  // Refuse anything that escapes the assets folder (`..`, absolute paths, encoded separators).
  if (!full.startsWith(dir + path.sep)) return notFound(res);
  const info = await stat(full).catch(() => undefined);
  if (!info?.isFile()) return notFound(res);
  const type = CONTENT_TYPES[path.extname(full).toLowerCase()] ?? 'application/octet-stream';
  res.statusCode = 200;
  res.setHeader('content-type', type);
  res.setHeader('content-length', info.size);
  // Every file, not only the two entry points: /ui/index.html is as much a page as / is, and must not be framed either.
  setSecurityHeaders(res);
  // Vite puts a content hash in every file name under assets/, so those never change.
  res.setHeader('cache-control', decoded.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  res.end(await readFile(full));
}

function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
}

function notFound(res: ServerResponse): void {
  res.statusCode = 404;
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end('not found\n');
}
