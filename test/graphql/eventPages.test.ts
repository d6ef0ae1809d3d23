import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../src/domain/events.js';
import { EVENT_SCAN_WINDOW, scanCharge } from '../../src/domain/historyPort.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seedEventHistory } from '../helpers/eventHistory.js';
import { collect, gqlData, wsClient } from '../helpers/graphql.js';
import { eventOf } from '../helpers/events.js';

/**
 * Pages and replays of filters that no index serves, over a history longer than what one page may look at
 * (docs/adr/0036-bounded-event-reads.md): a page of `events` looks at 5 windows of ids at most, a replay reads one
 * window per page; both go on from where they stopped and find every match once, in order.
 */
const HISTORY = 60_000;
const PAGE_SCAN = 5 * EVENT_SCAN_WINDOW;
const PAGE = `query($filter: EventFilter, $first: Int, $after: String) {
  events(filter: $filter, first: $first, after: $after) { edges { cursor node { id object { name } } } pageInfo { hasNextPage endCursor } }
}`;

interface Page {
  events: { edges: { cursor: string; node: { id: string; object: { name: string } | null } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

describe('event pages and replays of a filter no index serves', () => {
  let app: TestApp;
  let first = 0;
  let needles: number[] = [];
  beforeAll(async () => {
    app = await startTestApp();
    first = seedEventHistory(app.databaseFile, HISTORY, [5, 30_000, HISTORY - 1]);
    needles = [5, 30_000, HISTORY - 1].map((i) => first + i);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  const page = async (filter: Record<string, unknown>, size: number, after?: string | null) =>
    (await gqlData<Page>(app.url, PAGE, { filter, first: size, after: after ?? null })).events;

  it('holds fewer than `first` while hasNextPage when its reads stop; endCursor goes on past what was looked at', async () => {
    const one = await page({ name: 'needle' }, 2);
    // Two matches in the ids the page looked at; the third lies beyond them.
    expect(one.edges.map((e) => Number(e.node.id))).toEqual(needles.slice(0, 2));
    expect(one.pageInfo).toEqual({ hasNextPage: true, endCursor: String(PAGE_SCAN) });
    const two = await page({ name: 'needle' }, 2, one.pageInfo.endCursor);
    expect(two.edges.map((e) => Number(e.node.id))).toEqual([needles[2]]);
    expect(two.pageInfo).toEqual({ hasNextPage: false, endCursor: String(needles[2]) });
    // A full page ends at its last edge, as any page does.
    expect((await page({ name: 'needle' }, 1)).pageInfo).toEqual({ hasNextPage: true, endCursor: String(needles[0]) });
  });

  it('answers a filter that matches nothing with empty pages that go on to the end of the history', async () => {
    const one = await page({ kind: 'AGENT_POOL', name: 'nothing' }, 10);
    expect(one).toEqual({ edges: [], pageInfo: { hasNextPage: true, endCursor: String(PAGE_SCAN) } });
    const two = await page({ kind: 'AGENT_POOL', name: 'nothing' }, 10, one.pageInfo.endCursor);
    expect(two).toEqual({ edges: [], pageInfo: { hasNextPage: false, endCursor: String(PAGE_SCAN) } });
    // After every event: nothing, at once (the createdAt index finds no event that recent).
    expect(await page({ since: '2099-01-01T00:00:00.000Z' }, 10)).toEqual({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it('keeps full pages for a filter an index serves, however far apart its matches are', async () => {
    const full = await page({ namespace: 'ns-5', name: 'pool-5' }, 3, String(first + 40_000));
    expect(full.edges).toHaveLength(3);
    expect(full.pageInfo).toEqual({ hasNextPage: true, endCursor: full.edges[2]!.cursor });
    const rare = await page({ types: ['AgentRecreated'], rolloutId: `ro_seed${(HISTORY - 50) / 50}` }, 50);
    // The last rollout's recreations: every fourth of its 50 events (seedEventHistory cycles over four types).
    expect(rare.edges.map((e) => Number(e.node.id))).toEqual(Array.from({ length: 13 }, (_, i) => first + HISTORY - 50 + 4 * i));
    expect(rare.pageInfo.hasNextPage).toBe(false);
  });

  it('charges a per-subscriber replay what it sent and what it looked at, a window at a time', async () => {
    const charges: number[] = [];
    const stream = app.domain.events.stream({
      filter: { name: 'needle' },
      after: 0,
      chargeReplay: (events) => {
        charges.push(events);
        return 0;
      },
    });
    const got: StoredEvent[] = [];
    for await (const event of stream) {
      got.push(event);
      if (got.length === 3) break;
    }
    expect(got.map((e) => e.id)).toEqual(needles);
    // One charge per window read up to the last needle (the end of the history): the rows it looked at, plus the
    // needles it found.
    expect(first).toBe(1);
    const windows = HISTORY / EVENT_SCAN_WINDOW;
    expect(charges).toHaveLength(windows);
    expect(charges.reduce((a, b) => a + b, 0)).toBe(3 + windows * scanCharge(EVENT_SCAN_WINDOW));
  });
  it('replays it window by window over a subscription, every match once and in order, then goes on live', async () => {
    const client = wsClient(app.url);
    try {
      const sub = collect<{ events: { id: string; object: { name: string } } }>(
        client,
        'subscription { events(after: "0", filter: { name: "needle" }) { id object { name } } }',
      );
      await sub.waitFor(3, 30_000);
      const [live] = await app.domain.events.append(eventOf(EventType.TargetFailed, { kind: 'AGENT_POOL', namespace: 'ns-1', name: 'needle' }));
      await sub.waitFor(4, 30_000);
      expect(sub.errors).toEqual([]);
      expect(sub.results.map((e) => Number(e.events.id))).toEqual([...needles, live!.id]);
      sub.unsubscribe();
    } finally {
      await client.dispose();
    }
  });
});
