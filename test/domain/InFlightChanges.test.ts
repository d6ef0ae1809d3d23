import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { InFlightChanges } from '../../src/domain/InFlightChanges.js';
import type { NewEvent } from '../../src/domain/events.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';

const recreated = (name: string, newImage: string): NewEvent => ({
  type: 'AgentRecreated',
  kind: 'AGENT_POOL',
  cluster: 'm-3',
  namespace: 'default',
  name,
  payload: { pool: `default/${name}`, newImage, reason: 'rollout' },
});

/**
 * Two replicas over one table: the one that was stopped while the target's shard moved to the other still holds the
 * intent in memory when it resumes. Its completion must not record the work a second time (CI, shardsAcrossReplicas:
 * two AgentRecreated events for one pool after a SIGSTOP of the leader).
 */
describe('InFlightChanges across replicas', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-in-flight-'));
  let db: SqliteDatabase;
  let log: EventLog;
  beforeAll(async () => {
    db = await openSqliteDatabase(`file:${path.join(dir, 'f.db')}`);
    log = new EventLog(db.store, new InProcessEventBus());
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const recreatedNames = () =>
    db.sql.all<{ name: string; payload: string }>('SELECT "name", "payload" FROM "Event" WHERE "type" = \'AgentRecreated\' ORDER BY "id"');

  it('records a completion once: the stale replica writes nothing, forgets the note and is told so', async () => {
    const stopped = new InFlightChanges(db.store, log).forCluster('m-3');
    const holder = new InFlightChanges(db.store, new EventLog(db.store, new InProcessEventBus())).forCluster('m-3');
    await stopped.put('AGENT_POOL', 'default', 'net-1', { rolloutId: 'r1', plannedImage: 'b' });
    // The shard moves: the new holder reads the table, and completes the work it finds.
    await holder.reloadCluster('m-3');
    expect(await holder.complete('AGENT_POOL', 'default', 'net-1', [recreated('net-1', 'b')])).toBe(true);
    // The stopped replica resumes with the note still in memory.
    expect(stopped.get('AGENT_POOL', 'default', 'net-1')).toEqual({ rolloutId: 'r1', plannedImage: 'b' });
    expect(await stopped.complete('AGENT_POOL', 'default', 'net-1', [recreated('net-1', 'b')])).toBe(false);
    expect(stopped.get('AGENT_POOL', 'default', 'net-1')).toBeUndefined();
    expect(recreatedNames().map((e) => e.name)).toEqual(['net-1']);
  });

  it('records the work once when the stopped replica wrote a later version of its intent before it noticed', async () => {
    const stopped = new InFlightChanges(db.store, log).forCluster('m-3');
    const holder = new InFlightChanges(db.store, log).forCluster('m-3');
    await stopped.put('AGENT_POOL', 'default', 'net-2', { rolloutId: 'r1', plannedImage: 'b' });
    await holder.reloadCluster('m-3');
    await stopped.put('AGENT_POOL', 'default', 'net-2', { rolloutId: 'r1', plannedImage: 'b', deletedAt: '2026-12-05T00:00:00.000Z' });

    // Its own work elsewhere is recorded as usual; the holder records net-2 (the row holds the later version), once.
    await stopped.put('AGENT_POOL', 'default', 'net-3', { rolloutId: 'r1', plannedImage: 'b' });
    const [holders, stoppedOwn] = await Promise.all([
      holder.complete('AGENT_POOL', 'default', 'net-2', [recreated('net-2', 'b')]),
      stopped.complete('AGENT_POOL', 'default', 'net-3', [recreated('net-3', 'b')]),
    ]);
    expect([holders, stoppedOwn]).toEqual([true, true]);
    expect(await stopped.complete('AGENT_POOL', 'default', 'net-2', [recreated('net-2', 'b')])).toBe(false);
    expect(await db.store.read.allInFlight()).toEqual([]);
    expect(recreatedNames().map((e) => e.name)).toEqual(['net-1', 'net-2', 'net-3']);
  });
});
