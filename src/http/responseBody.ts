import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip as gzipCallback, constants as zlib } from 'node:zlib';

const gzip = promisify(gzipCallback);

/** Smaller bodies are sent as they are: compressing them costs more than the bytes it saves. */
const COMPRESS_FROM_BYTES = 1024;

function acceptsGzip(req: IncomingMessage): boolean {
  const header = req.headers['accept-encoding'];
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return coding?.trim().toLowerCase() === 'gzip' && (!q || Number(q.slice(2)) > 0);
  });
}

/** A weak validator of the body: equal bodies, equal tags. */
export function etagOf(body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch === '*' || ifNoneMatch.split(',').some((tag) => tag.trim() === etag);
}

/**
 * Sends a complete GraphQL response body. A successful GET (queries only: Apollo refuses mutations over GET) carries
 * an ETag, and a client that sends it back in If-None-Match gets 304 without the body: a CI job polling `rollout(id)`
 * or a dashboard re-reading a page that has not changed. Bodies of 1 KiB and more are gzipped for clients that accept
 * it (a page of 100 pools or events shrinks 5–10×).
 */
export async function sendBody(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
  res.setHeader('vary', 'accept-encoding, authorization');
  if (req.method === 'GET' && res.statusCode === 200) {
    const etag = etagOf(body);
    res.setHeader('etag', etag);
    // Each use revalidates; private: answers depend on the caller's token.
    res.setHeader('cache-control', 'private, no-cache');
    if (matches(req.headers['if-none-match'], etag)) {
      res.statusCode = 304;
      res.removeHeader('content-type');
      res.end();
      return;
    }
  }
  if (body.length >= COMPRESS_FROM_BYTES && acceptsGzip(req)) {
    const compressed = await gzip(body, { level: zlib.Z_DEFAULT_COMPRESSION });
    res.setHeader('content-encoding', 'gzip');
    res.setHeader('content-length', compressed.length);
    res.end(req.method === 'HEAD' ? undefined : compressed);
    return;
  }
  res.end(body);
}
