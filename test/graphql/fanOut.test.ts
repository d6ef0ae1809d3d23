import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { EventPayload } from '../../src/domain/eventPayloads.js';
import { EventType, type NewEvent } from '../../src/domain/events.js';
import type { AppMetrics } from '../../src/metrics.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { collect, wsClient } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

const ADMIN = 'fan-out-admin-token-0123456789abcdefghijklmnop';
const FEED = `subscription($filter: EventFilter) { events(filter: $filter) { id type object { namespace name } payload } }`;

/** An AgentRecreated event numbered `seq` (its `seconds`: the order the tests check); `reason` may pad it. */
const recreated = (namespace: string, name: string, seq: number, extra: Partial<EventPayload<'AgentRecreated'>> = {}): NewEvent => ({
  type: EventType.AgentRecreated,
  kind: 'AGENT_POOL' as const,
  namespace,
  name,
  payload: { pool: `${namespace}/${name}`, oldImage: 'agent:v1', newImage: 'agent:v2', reason: 'drift', seconds: seq, ...extra },
});

/** Subscription payloads the fan-out executed. */
async function executions(metrics: AppMetrics): Promise<number> {
  return (await metrics.subscriptionExecutions.get()).values[0]?.value ?? 0;
}

async function gauge(metric: AppMetrics['subscriptionsShared']): Promise<number> {
  return (await metric.get()).values[0]?.value ?? 0;
}

/** A graphql-ws client on a bare WebSocket, so that the test can stop reading from its TCP socket. */
async function rawSubscriber(url: string, query: string, variables: Record<string, unknown>, id = 's1') {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  const messages: { id?: string; type: string; payload?: any }[] = [];
  const texts: string[] = [];
  let closed: { code: number; reason: string } | undefined;
  socket.on('message', (data, isBinary) => {
    texts.push(isBinary ? '(binary)' : String(data));
    messages.push(JSON.parse(String(data)));
  });
  socket.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  await until('connection_ack', () => messages.some((m) => m.type === 'connection_ack'));
  socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
  const tcp = (socket as unknown as { _socket: import('node:net').Socket })._socket;
  return {
    next: () => messages.filter((m) => m.type === 'next' && m.id === id),
    /** Every text message as received, in order (the `next` messages exactly as the server wrote them). */
    texts: () => texts,
    closed: () => closed,
    /** Stops reading: the server's writes pile up in the kernel's buffers, then in its own. */
    stopReading: () => tcp.pause(),
    resumeReading: () => tcp.resume(),
    close: () => socket.close(),
  };
}

describe('shared subscription fan-out', () => {
  let app: TestApp;

  beforeAll(async () => {
    // The caller's query-cost budget is out of the way: these tests are about the fan-out's mechanics, and one caller
    // sends them all, replays of 2 KB events to 60 subscriptions included (every event sent costs at least 10, ADR
    // 0030): in a fresh-clone CI run a subscribe was refused for the budget the earlier tests had spent, and the 60
    // subscriptions never all registered. The budget's own tests: test/graphql/liveCharge.test.ts, e2e/security.
    app = await startTestApp({
      env: { ROLLPLANE_WS_MAX_BUFFERED_BYTES: '65536', ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000', ROLLPLANE_QUERY_COST_BURST: '1000000000' },
    });
  });
  afterAll(async () => {
    await app?.close();
  });
  // The previous test's clients leave their groups when their sockets' close reaches the server.
  beforeEach(async () => {
    await until('no subscriber is left from the test before', async () => (await gauge(app.metrics.subscriptionsShared)) === 0);
  });

  it('executes each event once for every subscriber of the same document and variables', async () => {
    const clients = Array.from({ length: 5 }, () => wsClient(app.url));
    const base = await gauge(app.metrics.subscriptionsShared);
    const subs = clients.map((c) => collect(c, FEED, { filter: { namespace: 'same-doc' } }));
    await until('five subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 5);
    expect(await gauge(app.metrics.subscriptionGroups)).toBe(1);
    const before = await executions(app.metrics);
    for (let i = 0; i < 10; i++) await app.domain.events.append(recreated('same-doc', `p${i}`, i));
    await app.domain.events.append(recreated('elsewhere', 'x', 99));
    await Promise.all(subs.map((s) => s.waitFor(10)));
    expect(await executions(app.metrics)).toBe(before + 10);
    for (const sub of subs) {
      expect(sub.errors).toEqual([]);
      expect(sub.results.map((r: any) => r.events.payload.seconds)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    }
    // Byte-identical payloads: each subscriber got the one serialized result, under its own operation id.
    expect(new Set(subs.map((s) => JSON.stringify(s.results))).size).toBe(1);
    await Promise.all(clients.map((c) => c.dispose()));
    await until('the group is gone with its last subscriber', async () => (await gauge(app.metrics.subscriptionGroups)) === 0);
  });

  it('executes separately, with different results, for different variables', async () => {
    const a = wsClient(app.url);
    const b = wsClient(app.url);
    const base = await gauge(app.metrics.subscriptionsShared);
    const subA = collect(a, FEED, { filter: { namespace: 'vars-a' } });
    const subB = collect(b, FEED, { filter: { namespace: 'vars-b' } });
    await until('both subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 2);
    expect(await gauge(app.metrics.subscriptionGroups)).toBe(2);
    const before = await executions(app.metrics);
    for (let i = 0; i < 4; i++) await app.domain.events.append(recreated(i % 2 ? 'vars-b' : 'vars-a', `p${i}`, i));
    await subA.waitFor(2);
    await subB.waitFor(2);
    expect(subA.results.map((r: any) => [r.events.object.namespace, r.events.payload.seconds])).toEqual([
      ['vars-a', 0],
      ['vars-a', 2],
    ]);
    expect(subB.results.map((r: any) => [r.events.object.namespace, r.events.payload.seconds])).toEqual([
      ['vars-b', 1],
      ['vars-b', 3],
    ]);
    expect(await executions(app.metrics)).toBe(before + 4);
    await a.dispose();
    await b.dispose();
  });

  it('keeps a slow client from delaying the others; it catches up from the store with every event once, in order', async () => {
    const base = await gauge(app.metrics.subscriptionsShared);
    const slow = await rawSubscriber(app.url, FEED, { filter: { namespace: 'slow' } });
    const fast = wsClient(app.url);
    const fastSub = collect(fast, FEED, { filter: { namespace: 'slow' } });
    await until('both subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 2);
    slow.stopReading();
    const catchUpsBefore = (await app.metrics.subscriptionCatchUps.get()).values[0]?.value ?? 0;
    // 32 KiB events until the slow socket's buffers (kernel, then ws) exceed the 64 KiB budget and it falls behind.
    const big = 'x'.repeat(32 * 1024);
    let appended = 0;
    while (((await app.metrics.subscriptionCatchUps.get()).values[0]?.value ?? 0) === catchUpsBefore) {
      if (appended >= 4000) throw new Error('the slow subscriber never fell behind');
      await app.domain.events.append(recreated('slow', `p${appended}`, appended, { reason: big }));
      appended++;
      await fastSub.waitFor(appended);
    }
    // A few more while it is behind; the fast subscriber gets them all without waiting for the slow one.
    for (let i = 0; i < 20; i++, appended++) await app.domain.events.append(recreated('slow', `p${appended}`, appended, { reason: big }));
    await fastSub.waitFor(appended);
    expect(fastSub.results.map((r: any) => r.events.payload.seconds)).toEqual(Array.from({ length: appended }, (_, i) => i));
    expect(slow.next().length).toBeLessThan(appended);

    slow.resumeReading();
    await until(`the slow subscriber has all ${appended} events`, () => slow.next().length >= appended, 60_000);
    // Events appended after it caught up arrive live, still once and in order.
    for (let i = 0; i < 5; i++, appended++) await app.domain.events.append(recreated('slow', `p${appended}`, appended));
    await until('the live events after catching up', () => slow.next().length >= appended);
    const seqs = slow.next().map((m) => m.payload.data.events.payload.seconds);
    expect(seqs).toEqual(Array.from({ length: appended }, (_, i) => i));
    expect(slow.closed()).toBeUndefined();
    slow.close();
    await fast.dispose();
  });

  it('replays one page at a time per socket to many `after:` subscriptions that stopped reading, and each still gets every event once', async () => {
    // Attack finding: a client opening 100 `after: "0"` subscriptions on a socket it does not read made every one of
    // them hold a 500-event replay page at once (about 45 MB a socket). Store reads are counted while in flight; the
    // wrapper yields once, as a PostgreSQL read would, so that overlapping reads can show.
    const events = 300;
    const big = 'y'.repeat(2048);
    for (let i = 0; i < events; i += 50) {
      await app.domain.events.append(...Array.from({ length: 50 }, (_, k) => recreated('resume-many', `p${i + k}`, i + k, { reason: big })));
    }
    const log = app.domain.events as unknown as { pageAfter: (...args: unknown[]) => Promise<unknown> };
    const pageAfter = log.pageAfter;
    let inFlight = 0;
    let peak = 0;
    log.pageAfter = async (...args: unknown[]) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        const page = await pageAfter.apply(log, args);
        await new Promise((resolve) => setImmediate(resolve));
        return page;
      } finally {
        inFlight--;
      }
    };
    const sockets: WebSocket[] = [];
    const received = new Map<string, number[]>();
    const allMessages: any[] = [];
    try {
      for (let c = 0; c < 3; c++) {
        const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
        const messages: any[] = [];
        socket.on('message', (data) => {
          const m = JSON.parse(String(data));
          messages.push(m);
          allMessages.push(m);
          if (m.type === 'next') received.get(`${c}/${m.id}`)!.push(m.payload.data.events.payload.seconds);
        });
        await new Promise<void>((resolve, reject) => (socket.once('open', () => resolve()), socket.once('error', reject)));
        socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
        await until('connection_ack', () => messages.some((m) => m.type === 'connection_ack'));
        (socket as unknown as { _socket: import('node:net').Socket })._socket.pause();
        for (let i = 0; i < 20; i++) {
          received.set(`${c}/s${i}`, []);
          socket.send(
            JSON.stringify({
              id: `s${i}`,
              type: 'subscribe',
              payload: {
                query: FEED.replace('events(filter: $filter)', 'events(filter: $filter, after: "0")'),
                variables: { filter: { namespace: 'resume-many' } },
              },
            }),
          );
        }
        sockets.push(socket);
      }
      await until(
        () => `all 60 subscriptions are registered (errors: ${JSON.stringify(allMessages.filter((m) => m.type === 'error').slice(0, 3))})`,
        async () => (await gauge(app.metrics.subscriptionsShared)) === 60,
      );
      for (const socket of sockets) (socket as unknown as { _socket: import('node:net').Socket })._socket.resume();
      await until(`every subscription has all ${events} events`, () => [...received.values()].every((seqs) => seqs.length >= events), 60_000);
      for (const seqs of received.values()) expect(seqs).toEqual(Array.from({ length: events }, (_, i) => i));
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThanOrEqual(sockets.length);
    } finally {
      log.pageAfter = pageAfter;
      for (const socket of sockets) socket.terminate();
    }
  });

  it('moves a slow client that falls behind within a single burst to catching up from the store, with every event once, in order', async () => {
    const base = await gauge(app.metrics.subscriptionsShared);
    const slow = await rawSubscriber(app.url, FEED, { filter: { namespace: 'slow-burst' } });
    const fast = wsClient(app.url);
    const fastSub = collect(fast, FEED, { filter: { namespace: 'slow-burst' } });
    await until('both subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 2);
    slow.stopReading();
    const catchUps = async () => (await app.metrics.subscriptionCatchUps.get()).values[0]?.value ?? 0;
    const catchUpsBefore = await catchUps();
    // Bursts of 100 events of 8 KiB in one commit each (about 800 KiB, twelve times the 64 KiB budget) until the
    // slow socket's buffers overflow in the middle of one.
    const big = 'b'.repeat(8 * 1024);
    let appended = 0;
    while ((await catchUps()) === catchUpsBefore) {
      if (appended >= 20_000) throw new Error('the slow subscriber never fell behind');
      await app.domain.events.append(...Array.from({ length: 100 }, (_, i) => recreated('slow-burst', `p${appended + i}`, appended + i, { reason: big })));
      appended += 100;
      await fastSub.waitFor(appended);
    }
    expect(slow.next().length).toBeLessThan(appended);
    slow.resumeReading();
    await until(`the slow subscriber has all ${appended} events`, () => slow.next().length >= appended, 60_000);
    await app.domain.events.append(recreated('slow-burst', 'live', appended), recreated('slow-burst', 'live2', appended + 1));
    appended += 2;
    await until('the live events after catching up', () => slow.next().length >= appended);
    const seq = Array.from({ length: appended }, (_, i) => i);
    expect(slow.next().map((m) => m.payload.data.events.payload.seconds)).toEqual(seq);
    expect(fastSub.results.map((r: any) => r.events.payload.seconds)).toEqual(seq);
    expect(slow.closed()).toBeUndefined();
    slow.close();
    await fast.dispose();
  });

  it('resumes with `after` from the store and shares the group with live subscribers of the same operation', async () => {
    const first = await app.domain.events.append(recreated('resume', 'a', 0), recreated('resume', 'b', 1));
    const live = wsClient(app.url);
    const resumed = wsClient(app.url);
    const query = `subscription($filter: EventFilter, $after: ID) { events(filter: $filter, after: $after) { id payload } }`;
    const liveSub = collect(live, query, { filter: { namespace: 'resume' } });
    const resumedSub = collect(resumed, query, { filter: { namespace: 'resume' }, after: String(first[0]!.id - 1) });
    await resumedSub.waitFor(2);
    await app.domain.events.append(recreated('resume', 'c', 2));
    await resumedSub.waitFor(3);
    expect(resumedSub.results.map((r: any) => r.events.payload.seconds)).toEqual([0, 1, 2]);
    await liveSub.waitFor(1);
    expect(liveSub.results.map((r: any) => r.events.payload.seconds)).toEqual([2]);
    await live.dispose();
    await resumed.dispose();
  });
});

describe('shared subscription fan-out, frames written directly', () => {
  let app: TestApp;

  // A budget far above the burst, so that every message goes out live, through the frames path (with the 64 KiB
  // budget above, a burst of 300 KiB sends the sockets to catching up from the store, which writes through ws).
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_WS_MAX_BUFFERED_BYTES: String(16 * 1024 * 1024) } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('writes a burst as one protocol-valid `next` per event, byte for byte what graphql-ws would send, to every subscriber', async () => {
    const base = await gauge(app.metrics.subscriptionsShared);
    // Two sockets with the same operation id share the written frames; a third id (not ASCII) gets its own.
    const same = [
      await rawSubscriber(app.url, FEED, { filter: { namespace: 'burst' } }),
      await rawSubscriber(app.url, FEED, { filter: { namespace: 'burst' } }),
    ];
    const other = await rawSubscriber(app.url, FEED, { filter: { namespace: 'burst' } }, 'écran-✓-2');
    const client = wsClient(app.url);
    const sub = collect(client, FEED, { filter: { namespace: 'burst' } });
    await until('four subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 4);
    // A first event, once everyone has it all are live (the group's first subscriber positions itself from the store).
    await app.domain.events.append(recreated('burst', 'first', 0));
    await sub.waitFor(1);
    for (const raw of [...same, other]) await until('the first event reached the raw subscriber', () => raw.next().length >= 1);
    const handoffSamples = async () => (await app.metrics.subscriptionHandoffLag.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
    const samplesBefore = await handoffSamples();
    const catchUpsBefore = (await app.metrics.subscriptionCatchUps.get()).values[0]?.value ?? 0;
    // One commit of 300 events of about 1 KiB (one delivery, more than one 64 KiB piece of frames), then one more.
    const note = 'ü✓'.repeat(300);
    await app.domain.events.append(...Array.from({ length: 300 }, (_, i) => recreated('burst', `p${i}`, i + 1, { reason: note })));
    await app.domain.events.append(recreated('burst', 'last', 301));
    const seqs = Array.from({ length: 302 }, (_, i) => i);
    await sub.waitFor(302);
    expect(sub.results.map((r: any) => r.events.payload.seconds)).toEqual(seqs);
    for (const raw of [...same, other]) {
      await until('every event reached the raw subscriber', () => raw.next().length >= 302);
      expect(raw.next().map((m) => m.payload.data.events.payload.seconds)).toEqual(seqs);
      // Exactly graphql-ws's serialization of the same message (JSON.stringify of id, type, payload), one per frame.
      for (const text of raw.texts().filter((t) => t.includes('"type":"next"'))) {
        const message = JSON.parse(text);
        expect(text).toBe(JSON.stringify({ id: message.id, type: 'next', payload: message.payload }));
      }
      expect(raw.closed()).toBeUndefined();
    }
    const nextTexts = (raw: (typeof same)[number]) => raw.texts().filter((t) => t.includes('"type":"next"'));
    expect(nextTexts(same[1]!)).toEqual(nextTexts(same[0]!));
    expect(nextTexts(other).map((t) => t.replace('"id":"écran-✓-2"', '"id":"s1"'))).toEqual(nextTexts(same[0]!));
    expect(nextTexts(other)[0]).toContain('"id":"écran-✓-2"');
    expect(JSON.stringify(sub.results[5])).toBe(JSON.stringify(JSON.parse(nextTexts(other)[5]!).payload.data));
    // All of it went out live (the frames path), none caught up from the store.
    expect((await app.metrics.subscriptionCatchUps.get()).values[0]?.value ?? 0).toBe(catchUpsBefore);
    // The handoff latency is sampled for one live subscriber in 16 of the group (here the first), once per event.
    expect((await handoffSamples()) - samplesBefore).toBe(301);
    for (const raw of [...same, other]) raw.close();
    await client.dispose();
  });
});

describe('shared fan-out with authentication', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('executes separately per role, and a revoked token leaves its group', async () => {
    const { token: viewerToken, secret: viewer } = await app.domain.tokens.create({ name: 'screen', role: 'viewer' });
    const v = wsClient(app.url, { connectionParams: { authorization: `Bearer ${viewer}` } });
    const a = wsClient(app.url, { connectionParams: { authorization: `Bearer ${ADMIN}` } });
    const base = await gauge(app.metrics.subscriptionsShared);
    const subV = collect(v, FEED, { filter: { namespace: 'roles' } });
    const subA = collect(a, FEED, { filter: { namespace: 'roles' } });
    await until('both subscribers are registered', async () => (await gauge(app.metrics.subscriptionsShared)) === base + 2);
    expect(await gauge(app.metrics.subscriptionGroups)).toBe(2);
    const before = await executions(app.metrics);
    await app.domain.events.append(recreated('roles', 'p', 1));
    await subV.waitFor(1);
    await subA.waitFor(1);
    expect(await executions(app.metrics)).toBe(before + 2);
    expect(subV.results).toEqual(subA.results);

    await app.domain.tokens.revoke(viewerToken.id);
    await subV.waitFor(2);
    expect(JSON.stringify(subV.errors)).toMatch(/4403|revoked/);
    await until("the viewer's group is gone", async () => (await gauge(app.metrics.subscriptionGroups)) === 1);
    await app.domain.events.append(recreated('roles', 'p', 2));
    await subA.waitFor(2);
    expect(subV.results).toHaveLength(1);
    await v.dispose();
    await a.dispose();
  });
  // Attack probe (sub-complete-race): subscribe/complete storms reusing one id leaked subscriptions that kept
  // delivering (thousands of messages for three events) and were never ended, not even when the socket closed.
  // A narrow race remains in graphql-ws (an operation that settles while a refused reuse holds its id's slot stays
  // live until the socket closes), so this checks what must hold: the live subscription gets each event once, and
  // nothing is left once the socket is gone.
  it('leaves nothing behind a storm of reused operation ids once the socket is gone', async () => {
    const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const messages: { id?: string; type: string; payload?: any }[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${ADMIN}` } }));
    await until('connection_ack', () => messages.some((m) => m.type === 'connection_ack'));
    const activeBefore = await gauge(app.metrics.subscriptionsActive);
    const query = `subscription { events(filter: { namespace: "reuse" }) { id } }`;
    for (let i = 0; i < 300; i++) {
      socket.send(JSON.stringify({ id: 'op0', type: 'subscribe', payload: { query } }));
      socket.send(JSON.stringify({ id: 'op0', type: 'complete' }));
    }
    socket.send(JSON.stringify({ id: 'live', type: 'subscribe', payload: { query } }));
    const live = () => messages.filter((m) => m.type === 'next' && m.id === 'live');
    // The live subscription is in place once an event published now reaches it: publish one per look until one does.
    let published = 0;
    await until(
      'the live subscription to start',
      async () => {
        if (live().length > 0) return true;
        await app.domain.events.append(recreated('reuse', `marker-${published}`, 1000 + published));
        published++;
        return false;
      },
      { timeoutMs: 10_000 },
    );
    const base = live().length;
    for (let i = 0; i < 3; i++) await app.domain.events.append(recreated('reuse', `p${i}`, i));
    await app.domain.events.append(recreated('reuse', 'marker', 99));
    await until('the live subscription has the three events and the marker', () => live().length === base + 4);
    // Once each, in order.
    const ids = live().map((m) => Number(m.payload.data.events.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    socket.close();
    await until('no subscription is left once the socket closed', async () => (await gauge(app.metrics.subscriptionsActive)) === activeBefore);
    await until('no shared subscriber is left', async () => (await gauge(app.metrics.subscriptionsShared)) === 0);
  });

  // Attack probe (sub-after-values): a variable of the wrong type answered INTERNAL_SERVER_ERROR over WebSocket.
  it('answers a variable of the wrong type with BAD_USER_INPUT, as over HTTP', async () => {
    const client = wsClient(app.url, { connectionParams: { authorization: `Bearer ${ADMIN}` } });
    for (const a of [2.5, { x: 1 }, true]) {
      const sub = collect(client, 'subscription($a: ID) { events(after: $a) { id } }', { a });
      await sub.waitFor(1);
      const errors = sub.errors.flat() as { message: string; extensions?: { code?: string } }[];
      expect(errors.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
      expect(errors[0]!.message).toMatch(/Variable "\$a" got invalid value/);
    }
    await client.dispose();
  });
});
