import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type NewEvent } from '../../src/domain/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql, gqlData } from '../helpers/graphql.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import type { EventPayload } from '../../src/domain/eventPayloads.js';
import type { RolloutState } from '../../src/domain/rolloutStates.js';

/**
 * Notifications through the real server (in process, SQLite, the leader's dispatcher running): local receivers answer
 * as told, and the outbox and deliveries are read back over GraphQL.
 */

const NOTIFY_ENV = {
  ROLLPLANE_CONTROLLERS: 'on',
  ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8',
  ROLLPLANE_NOTIFY_BACKOFF_MS: '100',
  ROLLPLANE_NOTIFY_BACKOFF_MAX_MS: '400',
  ROLLPLANE_NOTIFY_MAX_ATTEMPTS: '3',
  ROLLPLANE_NOTIFY_TIMEOUT_MS: '500',
  ROLLPLANE_MUTATIONS_PER_MINUTE: '6000',
  ROLLPLANE_MUTATION_BURST: '1000',
  // The tests read deliveries while they wait: not what the query-cost limit is about.
  ROLLPLANE_QUERY_COST_PER_MINUTE: '100000000',
  ROLLPLANE_QUERY_COST_BURST: '10000000',
};

const SECRET = 'test-signing-secret-0123456789abcdef';

const CREATE = `mutation($input: CreateNotificationSubscriptionInput!) {
  createNotificationSubscription(input: $input) { signingSecret subscription { id name sink { kind target channel signed threaded } filter { types states rolloutIds } oncePer } }
}`;
const DELIVERIES = `query($filter: NotificationDeliveryFilter) {
  notificationDeliveries(filter: $filter, first: 20) {
    edges { node { id state attempts lastStatusCode lastError nextAttemptAt lastAttemptAt deliveredAt cloudEventType event { id type } subscription { id name } } }
  }
}`;

function rolloutEvent(rolloutId: string, to: RolloutState, extra: Partial<EventPayload<'RolloutStateChanged'>> = {}): NewEvent {
  return { type: EventType.RolloutStateChanged, rolloutId, kind: 'AGENT_POOL', payload: { from: 'PENDING', to, message: null, ...extra } };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('notifications', () => {
  let app: TestApp;
  let receiver: Receiver;
  // Our own file, so that a test can restart the server on it.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-notify-'));
  const databaseFile = path.join(dir, 'rollplane.db');
  beforeAll(async () => {
    receiver = await Receiver.start();
    app = await startTestApp({ databaseFile, env: NOTIFY_ENV });
    await until('the replica to lead', () => app.manager.isLeader());
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const subscribe = async (input: Record<string, unknown>) => (await gqlData(app.url, CREATE, { input })).createNotificationSubscription;
  const deliveries = async (filter: Record<string, unknown>) =>
    (await gqlData(app.url, DELIVERIES, { filter })).notificationDeliveries.edges.map((e: any) => e.node);

  it('delivers each matching event once as a signed CloudEvent, and a filter that matches nothing makes no delivery at all', async () => {
    const matching = await subscribe({
      name: 'rollout changes',
      sink: { kind: 'WEBHOOK', url: receiver.url('/hooks/a?token=abc'), secret: SECRET },
      filter: { types: ['RolloutStateChanged'], rolloutIds: ['ro_signed'] },
    });
    expect(matching.signingSecret).toBeNull();
    expect(matching.subscription.sink).toEqual({
      kind: 'WEBHOOK',
      target: `http://127.0.0.1:${receiver.port}/hooks/a?…`,
      channel: null,
      signed: true,
      threaded: false,
    });
    const nothing = await subscribe({
      name: 'virtual clusters',
      sink: { kind: 'WEBHOOK', url: receiver.url('/hooks/none') },
      filter: { kinds: ['VIRTUAL_CLUSTER'] },
    });
    expect(nothing.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const stored = await app.domain.events.append(rolloutEvent('ro_signed', 'PROGRESSING'), rolloutEvent('ro_signed', 'FAILED', { message: 'pool p failed' }), {
      type: EventType.AgentRecreated,
      rolloutId: 'ro_signed',
      kind: 'AGENT_POOL',
      namespace: 'default',
      name: 'p',
      payload: { pool: 'default/p', newImage: 'agent:v2' },
    });
    await until('both rollout events at the receiver', () => receiver.at('/hooks/a?token=abc').length >= 2);
    const got = receiver.verified('/hooks/a?token=abc', SECRET);
    expect(got.map((r) => r.json.id)).toEqual([String(stored[0]!.id), String(stored[1]!.id)]);
    const failed = got[1]!;
    expect(failed.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(failed.headers['idempotency-key']).toBe(String(stored[1]!.id));
    expect(failed.headers['user-agent']).toMatch(/^rollplane\//);
    expect(failed.json).toMatchObject({
      specversion: '1.0',
      id: String(stored[1]!.id),
      source: 'urn:rollplane',
      type: 'io.rollplane.rollout.failed.v1',
      subject: 'rollouts/ro_signed',
      time: stored[1]!.createdAt.toISOString(),
      datacontenttype: 'application/json',
      data: { type: 'RolloutStateChanged', rolloutId: 'ro_signed', payload: { from: 'PENDING', to: 'FAILED', message: 'pool p failed' } },
    });
    // A tampered body or an old timestamp does not verify.
    const { verifySignature } = await import('../../src/domain/notifications/signature.js');
    const header = String(failed.headers['x-rollplane-signature']);
    expect(verifySignature(SECRET, header, failed.body.replace('FAILED', 'SUCCEEDED'), Math.floor(failed.at / 1000))).toBe(false);
    expect(verifySignature(SECRET, header, failed.body, Math.floor(failed.at / 1000) + 600)).toBe(false);

    await until('both deliveries recorded', async () =>
      (await deliveries({ subscriptionId: matching.subscription.id })).every((d: any) => d.state === 'DELIVERED'),
    );
    const recorded = await deliveries({ subscriptionId: matching.subscription.id });
    expect(recorded.map((d: any) => [d.event.id, d.state, d.attempts, d.lastStatusCode, d.cloudEventType])).toEqual([
      [String(stored[1]!.id), 'DELIVERED', 1, 200, 'io.rollplane.rollout.failed.v1'],
      [String(stored[0]!.id), 'DELIVERED', 1, 200, 'io.rollplane.rollout.progressing.v1'],
    ]);
    // Routing is decided when the events commit: no row, so nothing can ever be sent for the filter that matched none.
    expect(await deliveries({ subscriptionId: nothing.subscription.id })).toEqual([]);
    expect(receiver.at('/hooks/none')).toEqual([]);
  });

  it('never shows or audits a secret: not the signing secret, not a Slack token, not a Slack webhook URL', async () => {
    const slackUrl = receiver.url('/services/T000/B000/very-secret-path');
    const created = await gql(
      app.url,
      `mutation { createNotificationSubscription(input: { name: "inline", sink: { kind: SLACK, url: "${slackUrl}" } }) { subscription { id sink { target } } } }`,
    );
    expect(created.errors).toBeUndefined();
    expect(created.data.createNotificationSubscription.subscription.sink.target).toBe(`http://127.0.0.1:${receiver.port}/…`);
    await subscribe({ name: 'variables', sink: { kind: 'SLACK', url: slackUrl, token: 'xoxb-secret-token-value', channel: 'C123' } });
    const listed = JSON.stringify(
      await gqlData(app.url, '{ notificationSubscriptions { edges { node { id name sink { kind target channel } lastError } } } }'),
    );
    expect(listed).not.toContain('very-secret-path');
    expect(listed).not.toContain('xoxb-secret-token-value');
    const audit = JSON.stringify(await gqlData(app.url, '{ auditEntries(first: 100) { edges { node { operation input } } } }'));
    expect(audit).toContain('createNotificationSubscription');
    expect(audit).not.toContain('very-secret-path');
    expect(audit).not.toContain('xoxb-secret-token-value');
    expect(audit).not.toContain(SECRET);
  });

  it('retries a 500 then 200 with backoff, dead-letters a receiver that hangs past the timeout, refuses the connection or answers 410, and replays', async () => {
    receiver.on('/flaky', (r) => (r.n === 0 ? { status: 500, body: 'boom '.repeat(200) } : { status: 200 }));
    receiver.on('/hang', () => 'hang');
    receiver.on('/gone', () => ({ status: 410, body: '{"error":"no such hook"}' }));
    const refusedUrl = `http://127.0.0.1:${await closedPort()}/hook`;
    const filter = { rolloutIds: ['ro_retry'] };
    const subs = {
      flaky: await subscribe({ name: 'flaky', sink: { kind: 'WEBHOOK', url: receiver.url('/flaky'), secret: SECRET }, filter }),
      hang: await subscribe({ name: 'hang', sink: { kind: 'WEBHOOK', url: receiver.url('/hang'), secret: SECRET }, filter }),
      refused: await subscribe({ name: 'refused', sink: { kind: 'WEBHOOK', url: refusedUrl, secret: SECRET }, filter }),
      gone: await subscribe({ name: 'gone', sink: { kind: 'WEBHOOK', url: receiver.url('/gone'), secret: SECRET }, filter }),
    };
    const [event] = await app.domain.events.append(rolloutEvent('ro_retry', 'FAILED'));
    const one = async (name: keyof typeof subs) => (await deliveries({ subscriptionId: subs[name].subscription.id }))[0];

    const flaky = await until('the flaky receiver to get it', async () => ((await one('flaky'))?.state === 'DELIVERED' ? one('flaky') : undefined));
    expect(flaky).toMatchObject({ attempts: 2, lastStatusCode: 200, lastError: null });
    const [first, second] = receiver.at('/flaky');
    // The second attempt waited at least half the first backoff step (100 ms, jittered between 50 and 100).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(50);
    expect(second!.json.id).toBe(first!.json.id);
    expect(second!.headers['x-rollplane-attempt']).toBe('2');

    const gone = await until('the 410 to be dead-lettered', async () => ((await one('gone'))?.state === 'DEAD_LETTER' ? one('gone') : undefined));
    expect(gone).toMatchObject({ attempts: 1, lastStatusCode: 410, lastError: 'HTTP 410: {"error":"no such hook"}', nextAttemptAt: null });
    const refused = await until('the refused one to be dead-lettered', async () =>
      (await one('refused'))?.state === 'DEAD_LETTER' ? one('refused') : undefined,
    );
    expect(refused).toMatchObject({ attempts: 3, lastStatusCode: null });
    expect(refused.lastError).toContain('ECONNREFUSED');
    const hang = await until('the hanging one to be dead-lettered', async () => ((await one('hang'))?.state === 'DEAD_LETTER' ? one('hang') : undefined));
    expect(hang).toMatchObject({ attempts: 3, lastStatusCode: null, lastError: 'timed out after 500 ms' });
    expect(receiver.at('/hang')).toHaveLength(3);
    // The subscription shows its last dispatch and error.
    const status = await gqlData(
      app.url,
      '{ notificationSubscription(id: "' +
        subs.hang.subscription.id +
        '") { lastError lastStatusCode lastDeliveredAt deliveries { pending delivered deadLettered } } }',
    );
    expect(status.notificationSubscription).toEqual({
      lastError: 'timed out after 500 ms',
      lastStatusCode: null,
      lastDeliveredAt: null,
      deliveries: { pending: 0, delivered: 0, deadLettered: 1 },
    });

    // Fixed: a replay of the one delivery sends it again, from attempt 1.
    receiver.on('/hang', () => ({ status: 204 }));
    const replayed = await gqlData(app.url, 'mutation($id: ID!) { replayNotificationDelivery(id: $id) { id state attempts } }', { id: hang.id });
    expect(replayed.replayNotificationDelivery).toMatchObject({ state: 'PENDING', attempts: 0 });
    await until('the replayed delivery to arrive', async () => (await one('hang'))?.state === 'DELIVERED');
    expect(receiver.distinctIds('/hang')).toEqual([String(event!.id)]);
    // A range of a subscription's dead letters.
    const range = await gqlData(app.url, 'mutation($input: ReplayNotificationDeliveriesInput!) { replayNotificationDeliveries(input: $input) { replayed } }', {
      input: { subscriptionId: subs.refused.subscription.id, fromEventId: String(event!.id), toEventId: String(event!.id) },
    });
    expect(range.replayNotificationDeliveries.replayed).toBe(1);
    await until('the range replay to be tried again', async () => {
      const d = await one('refused');
      return d.state === 'DEAD_LETTER' && d.lastAttemptAt > refused.lastAttemptAt;
    });

    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/rollplane_notification_deliveries_total\{sink="webhook",outcome="dead_lettered"\} [3-9]/);
    expect(metrics).toMatch(/rollplane_notification_deliveries_total\{sink="webhook",outcome="retried"\} \d/);
    expect(metrics).toMatch(/rollplane_notification_delivery_latency_seconds_count\{sink="webhook"\} [1-9]/);
    expect(metrics).toMatch(/^rollplane_notification_queue_depth \d+$/m);
    expect(metrics).toMatch(/^rollplane_notification_queue_age_seconds [\d.e+-]+$/m);
  });

  it('sends one message for a rollout that flaps between PAUSED and PROGRESSING, once per rollout', async () => {
    const once = await subscribe({
      name: 'paused once',
      sink: { kind: 'WEBHOOK', url: receiver.url('/once'), secret: SECRET },
      filter: { states: ['PAUSED'], rolloutIds: ['ro_flap', 'ro_flap_2'] },
      oncePer: ['ROLLOUT'],
    });
    expect(once.subscription.oncePer).toEqual(['ROLLOUT']);
    for (const to of ['PAUSED', 'PROGRESSING', 'PAUSED', 'PROGRESSING'] as const)
      await app.domain.events.append(rolloutEvent('ro_flap', to, { message: `at ${Date.now()}` }));
    await app.domain.events.append(rolloutEvent('ro_flap', 'PAUSED'), rolloutEvent('ro_flap_2', 'PAUSED'));
    await until('both rollouts once at the receiver', () => receiver.distinctIds('/once').length >= 2);
    const rows = await deliveries({ subscriptionId: once.subscription.id });
    expect(rows).toHaveLength(2);
    expect(
      receiver
        .at('/once')
        .map((r) => r.json.data.rolloutId)
        .sort(),
    ).toEqual(['ro_flap', 'ro_flap_2']);
  });

  it('keeps one Slack thread per rollout, through a restart, and sends unthreaded where the webhook gives no ts', async () => {
    receiver.on('/api/chat.postMessage', (r) => ({ status: 200, body: JSON.stringify({ ok: true, channel: 'C123', ts: `1700000000.00010${r.n}` }) }));
    receiver.on('/incoming', () => ({ status: 200, body: 'ok' }));
    const filter = { rolloutIds: ['ro_thread', 'ro_thread_2'] };
    await subscribe({
      name: 'slack bot',
      sink: { kind: 'SLACK', url: receiver.url('/api/chat.postMessage'), token: 'xoxb-test-token-123', channel: 'C123' },
      filter,
    });
    await subscribe({ name: 'slack hook', sink: { kind: 'SLACK', url: receiver.url('/incoming') }, filter });
    await app.domain.events.append(rolloutEvent('ro_thread', 'PROGRESSING'), rolloutEvent('ro_thread', 'PAUSED'), rolloutEvent('ro_thread_2', 'PROGRESSING'));
    await until('three messages from the bot', () => receiver.at('/api/chat.postMessage').length >= 3);
    const bot = receiver.at('/api/chat.postMessage');
    expect(bot[0]!.headers.authorization).toBe('Bearer xoxb-test-token-123');
    const byRollout = (id: string) => bot.filter((r) => r.json.text.includes(id + '`') || r.json.text.includes(`${id}>`));
    const [root, reply] = bot.filter((r) => r.json.text.includes('`ro_thread`'));
    expect(root!.json).toMatchObject({ channel: 'C123', unfurl_links: false });
    expect(root!.json.thread_ts).toBeUndefined();
    expect(reply!.json.thread_ts).toBe(`1700000000.00010${root!.n}`);
    expect(byRollout('ro_thread_2')[0]!.json.thread_ts).toBeUndefined();
    await until('three messages on the incoming webhook', () => receiver.at('/incoming').length >= 3);
    expect(receiver.at('/incoming').every((r) => r.json.thread_ts === undefined)).toBe(true);

    // The thread is in the database: a restarted server replies in it.
    await app.close();
    app = await startTestApp({ databaseFile, env: NOTIFY_ENV });
    await until('the restarted replica to lead', () => app.manager.isLeader());
    await app.domain.events.append(rolloutEvent('ro_thread', 'SUCCEEDED'));
    await until('the message after the restart', () => receiver.at('/api/chat.postMessage').length >= 4);
    expect(receiver.at('/api/chat.postMessage')[3]!.json.thread_ts).toBe(`1700000000.00010${root!.n}`);
  });
});

describe('sink URLs without an operator allowance', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_MUTATIONS_PER_MINUTE: '6000', ROLLPLANE_MUTATION_BURST: '1000' } });
  });
  afterAll(() => app?.close());

  it.each([
    ['http://169.254.169.254/latest/meta-data/iam/security-credentials/', /169\.254\.169\.254 is not a public address/],
    ['http://localhost:4000/graphql', /localhost resolves to .* which is not a public address/],
    ['http://127.0.0.1:4000/graphql', /127\.0\.0\.1 is not a public address/],
    ['http://[::ffff:169.254.169.254]/', /not a public address/],
    ['http://10.0.0.1/hook', /not a public address/],
    ['gopher://example.com/', /http or https/],
  ])('refuses %s, and saves nothing', async (url, reason) => {
    const res = await gql(app.url, CREATE, { input: { name: 'ssrf', sink: { kind: 'WEBHOOK', url } } });
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.extensions?.field).toBe('input.sink.url');
    expect(res.errors?.[0]?.message).toMatch(reason);
    expect((await gqlData(app.url, '{ notificationSubscriptions { edges { node { id } } } }')).notificationSubscriptions.edges).toEqual([]);
  });
});
