import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Issue 18, finding 6: in the default mode (authentication off on loopback) any web page could open the WebSocket and
 * run mutations as the anonymous admin (cross-site WebSocket hijacking), and DNS rebinding reached HTTP.
 */
function upgrade(url: string, headers: Record<string, string>): Promise<{ opened: boolean; status?: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers });
    socket.once('open', () => {
      socket.close();
      resolve({ opened: true });
    });
    socket.once('unexpected-response', (_req, res) => {
      resolve({ opened: false, status: res.statusCode });
      socket.terminate();
    });
    socket.once('error', () => resolve({ opened: false }));
  });
}

/** An upgrade request by hand, to read the refusal's headers and body. */
function rawUpgrade(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}

/** A raw HTTP request with a chosen Host header (fetch does not let a caller set it). */
function withHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { host, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: 'mutation { createApiToken(input: { name: "rebound", role: admin }) { secret } }' }));
  });
}

describe('browser origins in the default mode (authentication off on loopback)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_CORS_ORIGINS: 'https://ui.example.com' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('refuses a WebSocket upgrade from another origin with 403', async () => {
    expect(await upgrade(app.url, { origin: 'https://evil.example' })).toEqual({ opened: false, status: 403 });
    expect(await upgrade(app.url, { origin: 'null' })).toEqual({ opened: false, status: 403 });
  });

  it('answers a refused upgrade in plain text with nosniff, without echoing the header', async () => {
    const res = await rawUpgrade(app.url, { origin: '<script>alert(1)</script>' });
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).not.toContain('<script>');
  });

  it('allows no Origin (CLI), the same origin (the web UI) and an origin on the CORS list', async () => {
    const host = new URL(app.url).host;
    expect((await upgrade(app.url, {})).opened).toBe(true);
    expect((await upgrade(app.url, { origin: `http://${host}` })).opened).toBe(true);
    expect((await upgrade(app.url, { origin: 'https://ui.example.com' })).opened).toBe(true);
  });

  it('refuses a foreign Host header (DNS rebinding) with 421 over HTTP and WebSocket alike, and creates nothing', async () => {
    const port = new URL(app.url).port;
    const tokensBefore = await app.prisma.apiToken.count();
    expect(await withHost(app.url, `rebind.evil.example:${port}`)).toBe(421);
    expect(await upgrade(app.url, { host: `rebind.evil.example:${port}`, origin: `http://rebind.evil.example:${port}` })).toEqual({
      opened: false,
      status: 421,
    });
    expect(await app.prisma.apiToken.count()).toBe(tokensBefore);
    expect(await withHost(app.url, `localhost:${port}`)).toBe(200);
    expect(await withHost(app.url, `[::1]:${port}`)).toBe(200);
  });
});

describe('browser origins with authentication on', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: 'admin-secret-for-origin-tests-0123456789' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('accepts any Host (a token is needed anyway) but still refuses a foreign Origin on the WebSocket', async () => {
    expect(await withHost(app.url, 'rollplane.internal.example')).toBe(401);
    expect(await upgrade(app.url, { origin: 'https://evil.example' })).toEqual({ opened: false, status: 403 });
  });
});
