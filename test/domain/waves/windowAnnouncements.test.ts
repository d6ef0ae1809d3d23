import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../../src/domain/EventBus.js';
import { EventLog } from '../../../src/domain/EventLog.js';
import { EventType } from '../../../src/domain/events.js';
import { WindowPolicies } from '../../../src/domain/gates/WindowPolicies.js';
import { WindowAnnouncer } from '../../../src/domain/waves/WindowAnnouncer.js';
import { type Database, openDatabase } from '../../../src/store/db.js';

/**
 * Window events per policy (issue 30, ADR 0069): each policy's own opening and closing, announced once per change for
 * the clusters it selects, whatever replica looks and however often; one event per policy, never one per cluster.
 */
const CLUSTERS = [
  { name: 'canary-1', labels: { stage: 'canary' } },
  { name: 'prod-a', labels: { stage: 'prod' } },
  { name: 'prod-b', labels: { stage: 'prod' } },
];

describe('window events per policy', () => {
  let dir: string;
  let db: Database;
  let log: EventLog;
  let windows: WindowPolicies;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-windows-'));
    db = await openDatabase(`file:${path.join(dir, 'w.db')}`);
    log = new EventLog(db.store, new InProcessEventBus());
    windows = new WindowPolicies(db.store);
    const at = new Date('2026-12-05T09:00:00Z');
    await windows.create(
      {
        name: 'prod-nights',
        kind: 'ALLOW',
        clusterSelector: 'stage=prod',
        weekly: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '02:00', end: '04:00' }],
      },
      at,
    );
    await windows.create(
      { name: 'canary-freeze', kind: 'DENY', clusterSelector: 'stage=canary', ranges: [{ from: '2026-12-05T12:00', to: '2026-12-05T13:00' }] },
      at,
    );
    await windows.create({ name: 'nobody', kind: 'DENY', clusterSelector: 'stage=none', ranges: [{ from: '2026-12-05T00:00', to: '2026-12-06T00:00' }] }, at);
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const windowEvents = async () =>
    (await db.store.read.listEventsAfter({ types: [EventType.WindowOpened, EventType.WindowClosed] }, undefined, 500)).events.map(
      (e): { type: string; rolloutId: string | null; [field: string]: unknown } => ({ type: e.type, rolloutId: e.rolloutId, ...e.payload }),
    );

  it("announces each policy's state once, then each change once, with the clusters it selects and the next change", async () => {
    const next = await windows.announce(CLUSTERS, log, new Date('2026-12-05T10:00:00Z'));
    expect(next?.toISOString()).toBe('2026-12-05T12:00:00.000Z');
    expect(await windowEvents()).toEqual([
      {
        type: 'WindowOpened',
        rolloutId: null,
        policy: 'canary-freeze',
        clusters: ['canary-1'],
        clusterCount: 1,
        reason: 'DENY window policy "canary-freeze" opened',
        until: '2026-12-05T12:00:00.000Z',
      },
      {
        type: 'WindowClosed',
        rolloutId: null,
        policy: 'prod-nights',
        clusters: ['prod-a', 'prod-b'],
        clusterCount: 2,
        reason: 'ALLOW window policy "prod-nights" closed',
        until: '2026-12-06T02:00:00.000Z',
      },
    ]);
    // Looking again (every replica, every minute) writes nothing until a policy changes.
    for (const minute of [1, 2, 30, 119]) await windows.announce(CLUSTERS, log, new Date(Date.parse('2026-12-05T10:00:00Z') + minute * 60_000));
    expect(await windowEvents()).toHaveLength(2);
    // The freeze starts at noon, ends at one; the night window opens at two and closes at four.
    for (const at of ['2026-12-05T12:00:00Z', '2026-12-05T12:30:00Z', '2026-12-05T13:00:00Z', '2026-12-06T02:00:00Z', '2026-12-06T04:00:00Z']) {
      await windows.announce(CLUSTERS, log, new Date(at));
    }
    expect((await windowEvents()).slice(2).map((e) => `${e.type} ${e.policy} ${e.until}`)).toEqual([
      'WindowClosed canary-freeze 2026-12-05T13:00:00.000Z',
      'WindowOpened canary-freeze null',
      'WindowOpened prod-nights 2026-12-06T04:00:00.000Z',
      'WindowClosed prod-nights 2026-12-07T02:00:00.000Z',
    ]);
  });

  it('two replicas looking at the same change announce it once', async () => {
    const other = new WindowPolicies(db.store);
    const at = new Date('2026-12-06T02:00:00Z');
    await Promise.all([windows.announce(CLUSTERS, log, at), other.announce(CLUSTERS, log, at), windows.announce(CLUSTERS, log, at)]);
    const opened = (await windowEvents()).filter((e) => e.policy === 'prod-nights');
    expect(opened.map((e) => e.type)).toEqual(['WindowOpened']);
  });

  it('a policy over a thousand clusters is one event naming the first fifty and the count', async () => {
    const fleet = Array.from({ length: 1000 }, (_, i) => ({ name: `edge-${String(i).padStart(4, '0')}`, labels: { stage: 'prod' } }));
    await windows.announce(fleet, log, new Date('2026-12-05T10:00:00Z'));
    const [event] = (await windowEvents()).filter((e) => e.policy === 'prod-nights');
    expect(event?.clusterCount).toBe(1000);
    expect(event?.clusters).toHaveLength(50);
    expect(await windowEvents()).toHaveLength(1); // canary-freeze selects none of them
  });

  it('the announcer looks again exactly when the next policy changes, and at least every minute', async () => {
    let now = Date.parse('2026-12-05T11:59:30Z');
    const announcer = new WindowAnnouncer({ windows, log, clusters: async () => CLUSTERS, logger: { warn: () => {} }, now: () => now });
    expect(await announcer.tick()).toBe(30_005);
    now = Date.parse('2026-12-05T10:00:00Z');
    expect(await announcer.tick()).toBe(60_000);
  });
});
