import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * CORS for an allow-list of origins (off when the list is empty: browsers then refuse cross-origin calls). Answers
 * preflight requests itself; returns true when the request was fully handled.
 */
export function applyCors(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): boolean {
  const origin = req.headers.origin;
  if (!origin || allowed.length === 0 || !allowed.includes(origin)) return false;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('vary', 'Origin');
  if (req.method === 'OPTIONS') {
    res.statusCode = 204;
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-allow-headers', 'authorization, content-type, apollo-require-preflight');
    res.setHeader('access-control-max-age', '600');
    res.end();
    return true;
  }
  return false;
}
