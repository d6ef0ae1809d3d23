import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/** Issue 18, finding 8 and part of 10: every page refuses framing; no response may be content-sniffed. */
describe('security headers', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  it.each(['/', '/ui/index.html', '/ui/playground.html'])('%s carries the CSP with frame-ancestors none', async (path) => {
    const res = await fetch(app.baseUrl + path, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('the playground served at /graphql to a browser carries it too', async () => {
    const res = await fetch(app.url, { headers: { accept: 'text/html' } });
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it.each([
    [
      'POST /graphql',
      () => fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ serverInfo { version } }"}' }),
    ],
    ['a GraphQL error', () => fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ nope }"}' })],
    ['/healthz', () => fetch(`${app.baseUrl}/healthz`)],
    ['/readyz', () => fetch(`${app.baseUrl}/readyz`)],
    ['/metrics', () => fetch(`${app.baseUrl}/metrics`)],
    ['an unknown path', () => fetch(`${app.baseUrl}/nope`)],
  ] as const)('%s carries x-content-type-options: nosniff', async (_name, send) => {
    const res = await send();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
