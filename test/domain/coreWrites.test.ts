import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { InFlightChanges } from '../../src/domain/InFlightChanges.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';

/**
 * The core writers' events are typed by their schema since ADR 0046; what they store must not have changed by a byte:
 * readers of any age (and CloudEvents receivers, which get the stored payload) see the same JSON text as before.
 */
describe('the stored payload of each core write (ADR 0046: byte-identical to before typed writes)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-core-writes-'));
  let db: SqliteDatabase;
  let log: EventLog;
  let rollouts: RolloutService;
  beforeAll(async () => {
    db = await openSqliteDatabase(`file:${path.join(dir, 'w.db')}`);
    log = new EventLog(db.store, new InProcessEventBus());
    rollouts = new RolloutService(db.store, log, KIND_CONTRACTS);
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The Event rows after `after`, as stored: type, object and the payload column's text. */
  const storedAfter = (after: number) =>
    db.sql.all<{ type: string; name: string | null; payload: string }>('SELECT "type", "name", "payload" FROM "Event" WHERE "id" > ? ORDER BY "id"', after);

  it('create, transitions, aborts with cancelled targets, target passes, in-flight completions and appends', async () => {
    const start = await log.lastEventId();
    const { rollout } = await rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion: 'agent:v2',
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'test' },
      targets: ['p0', 'p1', 'p2'].map((name) => ({ namespace: 'default', name, fromVersion: 'agent:v1', toVersion: 'agent:v2' })),
    });
    await rollouts.transition(rollout.id, 'PROGRESSING', null);
    await rollouts.pause(rollout.id, 'held');
    await rollouts.resume(rollout.id);
    await rollouts.setTargetStates(rollout.id, [
      { target: { namespace: 'default', name: 'p0' }, to: 'PROGRESSING' },
      { target: { namespace: 'default', name: 'p1' }, to: 'PROGRESSING' },
    ]);
    await rollouts.setTargetStates(rollout.id, [
      { target: { namespace: 'default', name: 'p0' }, to: 'SUCCEEDED', error: null },
      { target: { namespace: 'default', name: 'p1' }, to: 'FAILED', error: 'ImagePullBackOff' },
    ]);
    await rollouts.abort(rollout.id);
    const inFlight = new InFlightChanges(db.store, log);
    await inFlight.put('AGENT_POOL', 'default', 'p9', { rolloutId: null });
    await inFlight.complete('AGENT_POOL', 'default', 'p9', [
      { type: 'AgentRecreated', kind: 'AGENT_POOL', namespace: 'default', name: 'p9', payload: { pool: 'default/p9', newImage: 'agent:v2', reason: 'drift' } },
    ]);
    await log.append({ type: 'TargetFailed', rolloutId: rollout.id, kind: 'AGENT_POOL', namespace: 'default', name: 'p2', payload: { error: 'gone' } });

    expect(storedAfter(start).map((e) => [e.type, e.name, e.payload])).toEqual([
      ['RolloutStateChanged', null, '{"from":null,"to":"PENDING","toVersion":"agent:v2","targets":3}'],
      ['RolloutStateChanged', null, '{"from":"PENDING","to":"PROGRESSING","message":null}'],
      ['RolloutStateChanged', null, '{"from":"PROGRESSING","to":"PAUSED","message":"held"}'],
      ['RolloutStateChanged', null, '{"from":"PAUSED","to":"PROGRESSING","message":"resumed by user"}'],
      ['TargetStateChanged', 'p0', '{"from":"PENDING","to":"PROGRESSING","error":null}'],
      ['TargetStateChanged', 'p1', '{"from":"PENDING","to":"PROGRESSING","error":null}'],
      ['TargetStateChanged', 'p0', '{"from":"PROGRESSING","to":"SUCCEEDED","error":null}'],
      ['TargetStateChanged', 'p1', '{"from":"PROGRESSING","to":"FAILED","error":"ImagePullBackOff"}'],
      ['TargetFailed', 'p1', '{"error":"ImagePullBackOff"}'],
      ['RolloutStateChanged', null, '{"from":"PROGRESSING","to":"ABORTED","message":"aborted by user"}'],
      ['TargetStateChanged', 'p2', '{"from":"PENDING","to":"CANCELLED","error":null}'],
      ['AgentRecreated', 'p9', '{"pool":"default/p9","newImage":"agent:v2","reason":"drift"}'],
      ['TargetFailed', 'p2', '{"error":"gone"}'],
    ]);
  });
});
