import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../config.js';

export interface OriginPolicy {
  /** Origins CORS allows (ROLLPLANE_CORS_ORIGINS). */
  corsOrigins: readonly string[];
  /** Whether bearer tokens are required. */
  authEnabled: boolean;
  /** The address the server binds (HOST). */
  bindHost: string;
}

/** `host[:port]` → host, with IPv6 brackets removed. */
function hostName(hostHeader: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hostHeader);
  if (bracketed) return bracketed[1]!;
  return hostHeader.replace(/:\d+$/, '');
}

/**
 * DNS rebinding: a web page on evil.example whose name resolves to 127.0.0.1 reaches a loopback server with
 * `Host: evil.example`. Without authentication nothing else stops it, so then only loopback names and the bound host
 * are accepted. With authentication on, the caller needs a token, which no other site's page has.
 */
export function hostRefusal(req: IncomingMessage, policy: OriginPolicy): string | undefined {
  if (policy.authEnabled) return undefined;
  const host = req.headers.host;
  if (!host) return 'a Host header is required';
  const name = hostName(host.toLowerCase());
  if (isLoopback(name) || name === hostName(policy.bindHost.toLowerCase())) return undefined;
  return `Host "${host.slice(0, 100)}" is not allowed while authentication is off (use localhost, a 127.0.0.0/8 address or [::1])`;
}

/**
 * Cross-site WebSocket hijacking: browsers send cookies-free WebSocket upgrades to any origin and do not apply CORS, so
 * the server must check `Origin` itself. Allowed: no Origin (not a browser: CLI, CI), the same origin as the page the
 * server itself serves, or an origin on the CORS allow-list.
 */
export function webSocketOriginRefusal(req: IncomingMessage, policy: OriginPolicy): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  if (policy.corsOrigins.includes(origin)) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `Origin "${origin.slice(0, 100)}" is not a URL`;
  }
  if (req.headers.host !== undefined && originHost === req.headers.host.toLowerCase()) return undefined;
  return `Origin "${origin.slice(0, 100)}" may not open a WebSocket here (same origin only, or list it in ROLLPLANE_CORS_ORIGINS)`;
}
