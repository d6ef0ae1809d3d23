/**
 * Issue 34, attack 11, F4: live events cost the subscribers of the shared fan-out their share of each execution. A
 * caller alone on its document pays the whole operation's cost per event and is stopped at its budget, told where to
 * resume; many callers on one document split it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/domain/events.js';
import { EVENT_MIN_COST } from '../../src/graphql/guard.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { collect, wsClient } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

const ADMIN = 'live-charge-admin-token-0123456789abcdefghijkl';
const FEED = 'subscription { events { id type rolloutId object { namespace name } payload createdAt } }';
const EVENTS = 40;

const recreated = (seq: number) => ({
  type: EventType.AgentRecreated,
  kind: 'AGENT_POOL' as const,
  namespace: 'charged',
  name: `p${seq}`,
  payload: { pool: `charged/p${seq}`, oldImage: 'agent:v1', newImage: 'agent:v2', reason: 'drift', seconds: seq },
});

describe('live events of the shared fan-out', () => {
  let app: TestApp;

  beforeAll(async () => {
    // A budget of 200 that refills at 1 a second: small enough to see what each event costs.
    app = await startTestApp({
      env: {
        ROLLPLANE_AUTH: 'on',
        ROLLPLANE_ADMIN_TOKEN: ADMIN,
        ROLLPLANE_MAX_QUERY_COST: '200',
        ROLLPLANE_QUERY_COST_BURST: '200',
        ROLLPLANE_QUERY_COST_PER_MINUTE: '60',
      },
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  const subscriber = async (name: string, feed = FEED) => {
    const { secret } = await app.domain.tokens.create({ name, role: 'viewer' });
    return collect(wsClient(app.url, { connectionParams: { authorization: `Bearer ${secret}` } }), feed);
  };
  const shared = async () => (await app.metrics.subscriptionsShared.get()).values[0]?.value ?? 0;

  it('split between the callers of one document: ten of them receive every event', async () => {
    const before = await shared();
    const subs = await Promise.all(Array.from({ length: 10 }, (_, i) => subscriber(`many-${i}`)));
    await until('ten subscribers are live', async () => (await shared()) === before + 10);
    for (let i = 0; i < EVENTS; i++) await app.domain.events.append(recreated(i));
    await Promise.all(subs.map((sub) => sub.waitFor(EVENTS)));
    for (const sub of subs) {
      expect(sub.errors).toEqual([]);
      expect(sub.results).toHaveLength(EVENTS);
      sub.unsubscribe();
    }
  });

  it('paid in full by a caller alone on its document: past its budget the subscription ends RATE_LIMITED, naming where to resume', async () => {
    await until('the ten subscribers of the test before have left', async () => (await shared()) === 0);
    const sub = await subscriber('alone');
    await until('the subscriber is live', async () => (await shared()) === 1);
    for (let i = 0; i < EVENTS && sub.errors.length === 0; i++) await app.domain.events.append(recreated(i));
    await until('the subscription ended', () => sub.errors.length > 0);
    const [errors] = sub.errors as Array<Array<{ message: string; extensions: { code: string; after: string } }>>;
    expect(errors![0]!.extensions.code, JSON.stringify(errors)).toBe('RATE_LIMITED');
    // 200 of budget: 50 to subscribe, then the operation's cost per event; the 1 a second that refills is noise here.
    expect(sub.results.length).toBeGreaterThan(0);
    expect(sub.results.length).toBeLessThan(EVENTS);
    const last = sub.results.at(-1) as { events: { id: string } };
    expect(errors![0]!.extensions.after).toBe(last.events.id);
    expect(errors![0]!.message).toContain(`after: "${last.events.id}"`);
  });

  it('costs at least EVENT_MIN_COST an event however cheap the document (attack 12, F3)', async () => {
    await until('the subscribers of the tests before have left', async () => (await shared()) === 0);
    const sub = await subscriber('cheap', 'subscription { events { id } }');
    await until('the subscriber is live', async () => (await shared()) === 1);
    for (let i = 0; i < EVENTS && sub.errors.length === 0; i++) await app.domain.events.append(recreated(i));
    await until('the subscription ended', () => sub.errors.length > 0);
    // 150 left after subscribing pays for 15 events at 10 each (before: `events { id }` cost 1–2, all 40 went out).
    expect(sub.results.length).toBeLessThanOrEqual(150 / EVENT_MIN_COST + 2);
  });
});
