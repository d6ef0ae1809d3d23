import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import WebSocket from 'ws';
import { CLOSE_TOO_MANY, MAX_UNAUTHENTICATED_SOCKETS } from '../../../src/graphql/subscriptions.js';
import { collect, wsClient } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

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

/** Issue 34, findings 8 and 10. */
describe('WebSocket caps, round three', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION: '40' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  /** Opens a socket from `localAddress` that never sends connection_init; resolves once the server has it. */
  function silentSocket(localAddress: string): Promise<{ socket: WebSocket; closed?: number }> {
    return new Promise((resolve) => {
      const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { localAddress });
      const entry: { socket: WebSocket; closed?: number } = { socket };
      socket.once('close', (code) => {
        entry.closed = code;
        resolve(entry);
      });
      // A pong proves the server has accepted and counted it.
      socket.once('open', () => socket.ping());
      socket.once('pong', () => resolve(entry));
      socket.once('error', () => undefined);
    });
  }

  it('(finding 8) bounds sockets waiting to authenticate for the whole server, not only per source address', async () => {
    // Nine addresses of 127.0.0.0/8, each under its own cap of 32: 288 sockets were all held before the fix.
    const opened: { socket: WebSocket; closed?: number }[] = [];
    for (let a = 1; a <= 9; a++) {
      opened.push(...(await Promise.all(Array.from({ length: 32 }, () => silentSocket(`127.0.1.${a}`)))));
    }
    await until('the oldest to be closed', () => opened.filter((s) => s.closed !== undefined).length >= 9 * 32 - MAX_UNAUTHENTICATED_SOCKETS);
    // The oldest went (attack 11, F6: refusing the newest let sockets that never authenticate keep every client out).
    expect(opened.filter((s) => s.socket.readyState === WebSocket.OPEN)).toHaveLength(MAX_UNAUTHENTICATED_SOCKETS);
    expect(opened.slice(0, 32).every((s) => s.closed === CLOSE_TOO_MANY)).toBe(true);
    // With the server full of them, a client that authenticates still gets in.
    const client = wsClient(app.url);
    const probe = collect(client, '{ serverInfo { version } }');
    await probe.waitFor(1);
    expect(probe.errors).toEqual([]);
    await client.dispose();
    for (const { socket } of opened) socket.terminate();
  });

  it('(finding 10) holds more than ten shared subscriptions on one socket without a MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const client = wsClient(app.url);
      const subs = Array.from({ length: 30 }, (_, i) => collect(client, `subscription { events(filter: { name: "n${i}" }) { id } }`));
      const probe = collect(client, '{ serverInfo { version } }');
      await probe.waitFor(1);
      expect(probe.errors).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      for (const s of subs) s.unsubscribe();
      await client.dispose();
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
