import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, wsClient } from '../../helpers/graphql.js';

/** Issue 18, finding 9: one socket held 20,000 subscriptions (RSS 390 → 641 MB); connections were not capped either. */
describe('WebSocket caps', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT: '3', ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION: '5' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('closes a connection past the per-client cap with 4429, and accepts one again once another closed', async () => {
    const clients = Array.from({ length: 3 }, () => wsClient(app.url));
    const subs = clients.map((c) => collect(c, 'subscription { events { id } }'));
    // Each of the three is subscribed (the server answered nothing yet: no events) — prove it by a query on each.
    for (const c of clients) {
      const q = collect(c, '{ serverInfo { version } }');
      await q.waitFor(1);
      expect(q.errors).toEqual([]);
    }
    const fourth = wsClient(app.url);
    const refused = collect(fourth, '{ serverInfo { version } }');
    await refused.waitFor(1);
    expect(refused.errors).toEqual([expect.objectContaining({ code: 4429, reason: expect.stringContaining('at most 3') })]);
    await fourth.dispose();
    subs[0]!.unsubscribe();
    await clients[0]!.dispose();
    await expect
      .poll(async () => {
        const again = wsClient(app.url);
        const q = collect(again, '{ serverInfo { version } }');
        await q.waitFor(1);
        await again.dispose();
        return q.errors.length === 0 && q.results.length === 1;
      })
      .toBe(true);
    await Promise.all(clients.slice(1).map((c) => c.dispose()));
  });

  it('closes a connection that starts more operations than allowed with 4429', async () => {
    const client = wsClient(app.url);
    const subs = Array.from({ length: 5 }, () => collect(client, 'subscription { events { id } }'));
    const probe = collect(client, '{ serverInfo { version } }');
    await probe.waitFor(1);
    // The probe was the sixth operation while five subscriptions ran.
    expect(JSON.stringify(probe.errors)).toContain('4429');
    for (const s of subs) await s.waitFor(1);
    expect(subs.every((s) => JSON.stringify(s.errors).includes('4429'))).toBe(true);
    await client.dispose();
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/rollplane_requests_refused_total\{reason="subscriptions",transport="ws"\} 1/);
    expect(metrics).toMatch(/rollplane_requests_refused_total\{reason="connections",transport="ws"\} 1/);
  });
});
