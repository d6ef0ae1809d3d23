import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { EventType } from '../../src/domain/events.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import { openDatabase, type Database } from '../../src/store/db.js';
import { describeWithPostgres } from '../helpers/postgres.js';

/**
 * RolloutService.setTargetStates records a pass of the engine through the store's batched steps (updateTargets,
 * latestRevisions, insertRevisions). The same sentences on both stores: what the history says afterwards must not
 * depend on how many statements it took.
 */
function setTargetStatesContract(open: () => Promise<Database>): void {
  let db: Database;
  let rollouts: RolloutService;
  let log: EventLog;
  beforeAll(async () => {
    db = await open();
    log = new EventLog(db.store, new InProcessEventBus(), { publishFromStore: db.provider === 'postgresql' });
    rollouts = new RolloutService(db.store, log, KIND_CONTRACTS);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function create(toVersion: string, names: string[]) {
    const { rollout } = await rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion,
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'test' },
      targets: names.map((name) => ({ namespace: 'default', name, fromVersion: 'agent:v1', toVersion })),
    });
    return rollout;
  }

  it('records a pass in order: states, events with the state each target left, and revisions of the targets that succeeded', async () => {
    const rollout = await create('agent:v2', ['p0', 'p1', 'p2']);
    const before = await log.lastEventId();
    const t = (s: number) => new Date(Date.parse('2026-12-01T10:00:00Z') + s * 1000);
    await rollouts.setTargetStates(
      rollout.id,
      ['p0', 'p1', 'p2'].map((name) => ({ target: { namespace: 'default', name }, to: 'PROGRESSING' as const, countAttempt: true, at: t(1) })),
    );
    const recorded = await rollouts.setTargetStates(rollout.id, [
      { target: { namespace: 'default', name: 'p2' }, to: 'FAILED', error: 'ImagePullBackOff', at: t(2) },
      { target: { namespace: 'default', name: 'p0' }, to: 'SUCCEEDED', error: null, at: t(3) },
      // Named twice in one pass: changed twice, in order (the second change sees the first).
      { target: { namespace: 'default', name: 'p1' }, to: 'SUCCEEDED', error: null, at: t(4) },
      { target: { namespace: 'default', name: 'p1' }, to: 'FAILED', error: 'flapped', countAttempt: true, at: t(5) },
    ]);
    expect(recorded.map((r) => [r.name, r.state, r.attempts, r.error])).toEqual([
      ['p2', 'FAILED', 1, 'ImagePullBackOff'],
      ['p0', 'SUCCEEDED', 1, null],
      ['p1', 'SUCCEEDED', 1, null],
      ['p1', 'FAILED', 2, 'flapped'],
    ]);
    expect(recorded[1]!.admittedAt?.toISOString()).toBe(t(1).toISOString());
    expect(recorded[1]!.finishedAt?.toISOString()).toBe(t(3).toISOString());

    const events = (await log.listAfter({ rolloutId: rollout.id }, before, 100)).filter((e) => e.type !== EventType.RolloutStateChanged);
    expect(events.map((e) => [e.type, e.name, e.payload.from ?? null, e.payload.to ?? null])).toEqual([
      ...['p0', 'p1', 'p2'].map((name) => [EventType.TargetStateChanged, name, 'PENDING', 'PROGRESSING']),
      [EventType.TargetStateChanged, 'p2', 'PROGRESSING', 'FAILED'],
      [EventType.TargetFailed, 'p2', null, null],
      [EventType.TargetStateChanged, 'p0', 'PROGRESSING', 'SUCCEEDED'],
      [EventType.TargetStateChanged, 'p1', 'PROGRESSING', 'SUCCEEDED'],
      [EventType.TargetStateChanged, 'p1', 'SUCCEEDED', 'FAILED'],
      [EventType.TargetFailed, 'p1', null, null],
    ]);

    // The first recorded revision is the version a target ran before; p2 failed and got none.
    const revisions = async (name: string) => (await rollouts.revisions('AGENT_POOL', 'default', name, 10, undefined)).items;
    expect((await revisions('p0')).map((r) => [r.n, r.version, r.rolloutId, r.appliedAt.toISOString()])).toEqual([
      [2, 'agent:v2', rollout.id, t(3).toISOString()],
      [1, 'agent:v1', null, t(3).toISOString()],
    ]);
    expect((await revisions('p1')).map((r) => r.version)).toEqual(['agent:v2', 'agent:v1']);
    expect(await revisions('p2')).toEqual([]);

    // A later rollout adds one revision on top; one that brings a target to the version it already runs adds none.
    const next = await create('agent:v3', ['p0']);
    await rollouts.setTargetStates(next.id, [{ target: { namespace: 'default', name: 'p0' }, to: 'SUCCEEDED', error: null, at: t(6) }]);
    const same = await create('agent:v3', ['p0']);
    await rollouts.setTargetStates(same.id, [{ target: { namespace: 'default', name: 'p0' }, to: 'SUCCEEDED', error: null, at: t(7) }]);
    expect((await revisions('p0')).map((r) => [r.n, r.version])).toEqual([
      [3, 'agent:v3'],
      [2, 'agent:v2'],
      [1, 'agent:v1'],
    ]);
  });

  it('refuses a plain launch of a target still changing under an ended rollout; a supersede or a rollback takes it over', async () => {
    const aborted = await create('agent:v2', ['e0', 'e1']);
    await rollouts.setTargetStates(aborted.id, [{ target: { namespace: 'default', name: 'e0' }, to: 'PROGRESSING' }]);
    // Abort leaves the admitted target to finish.
    await rollouts.abort(aborted.id, 'test');
    expect((await rollouts.allTargets(aborted.id)).map((t) => [t.name, t.state])).toEqual([
      ['e0', 'PROGRESSING'],
      ['e1', 'CANCELLED'],
    ]);
    const spec = (name: string) => ({
      kind: 'AGENT_POOL' as const,
      fromVersion: 'agent:v1',
      toVersion: 'agent:v3',
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'test' },
      targets: [{ namespace: 'default', name, fromVersion: 'agent:v1', toVersion: 'agent:v3' }],
    });
    const before = await log.lastEventId();
    await expect(rollouts.create(spec('e0'), {})).rejects.toMatchObject({
      code: 'CONFLICT',
      message: `default/e0 is still changing under rollout ${aborted.id}, which ended before it finished; wait for it to finish`,
      details: { rolloutIds: [aborted.id] },
    });
    expect(await log.lastEventId()).toBe(before);
    // Its cancelled target is free, and so is e0 for a supersede and for the ended rollout's rollback.
    expect((await rollouts.create(spec('e1'), {})).created).toBe(true);
    // A rollback takes over its own original's targets only.
    await expect(rollouts.create({ ...spec('e0'), rollbackOfId: 'ro_another' }, {})).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await rollouts.create({ ...spec('e0'), rollbackOfId: aborted.id }, {})).created).toBe(true);
    expect((await rollouts.create({ ...spec('e0'), toVersion: 'agent:v4' }, { supersede: true })).created).toBe(true);
  });

  it("shows a kind's guard its busy rollouts: the active ones and those that ended with targets still changing", async () => {
    const finishing = await create('agent:v2', ['g0']);
    await rollouts.setTargetStates(finishing.id, [{ target: { namespace: 'default', name: 'g0' }, to: 'PROGRESSING' }]);
    await rollouts.abort(finishing.id, 'test');
    const done = await create('agent:v2', ['g1']);
    await rollouts.abort(done.id, 'test');
    const active = await create('agent:v2', ['g2']);
    const seen: { id: string; superseding: string[] }[] = [];
    await rollouts.create(
      {
        kind: 'AGENT_POOL',
        fromVersion: 'agent:v1',
        toVersion: 'agent:v5',
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
        cause: { actor: 'test' },
        targets: [{ namespace: 'default', name: 'g2', fromVersion: 'agent:v1', toVersion: 'agent:v5' }],
      },
      {
        supersede: true,
        guard: (busy, context) => {
          for (const r of busy) if ([finishing.id, done.id, active.id].includes(r.id)) seen.push({ id: r.id, superseding: [...context.superseding] });
        },
      },
    );
    // The aborted rollout with nothing left to finish is not busy; the one it supersedes is named as such.
    expect(seen.map((s) => s.id).sort()).toEqual([active.id, finishing.id].sort());
    expect(seen[0]!.superseding).toEqual([active.id]);
  });

  it('shows a guard the clusters each busy rollout has targets in, whatever their state', async () => {
    const target = (name: string, cluster?: string) => ({
      ...(cluster ? { cluster } : {}),
      namespace: 'default',
      name,
      fromVersion: 'agent:v1',
      toVersion: 'agent:v2',
    });
    const spec = {
      kind: 'AGENT_POOL' as const,
      fromVersion: 'agent:v1',
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'test' },
    };
    const { rollout: spread } = await rollouts.create({ ...spec, toVersion: 'agent:v2', targets: [target('w0', 'm1'), target('w1'), target('w2', 'm1')] });
    // Its pool in `local` is done: that cluster's agent still runs what the rollout moved it to.
    await rollouts.setTargetStates(spread.id, [{ target: { namespace: 'default', name: 'w1' }, to: 'PROGRESSING' }]);
    await rollouts.setTargetStates(spread.id, [{ target: { namespace: 'default', name: 'w1' }, to: 'SUCCEEDED' }]);
    let seen: string[] | undefined;
    await rollouts.create(
      { ...spec, toVersion: 'agent:v3', targets: [{ ...target('w9', 'm2'), toVersion: 'agent:v3' }] },
      {
        guard: (busy) => {
          seen = [...(busy.find((r) => r.id === spread.id)?.clusters ?? [])].sort();
        },
      },
    );
    expect(seen).toEqual(['local', 'm1']);
  });

  it('changes nothing when one target of a pass does not exist', async () => {
    const rollout = await create('agent:v2', ['q0']);
    const before = await log.lastEventId();
    await expect(
      rollouts.setTargetStates(rollout.id, [
        { target: { namespace: 'default', name: 'q0' }, to: 'PROGRESSING' },
        { target: { namespace: 'default', name: 'nope' }, to: 'PROGRESSING' },
      ]),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await rollouts.allTargets(rollout.id)).map((t) => t.state)).toEqual(['PENDING']);
    expect(await log.lastEventId()).toBe(before);
  });

  it('refuses a pass, whole, when a target is no longer in the state its writer saw (a leader resumed after another moved it on)', async () => {
    const rollout = await create('agent:v2', ['r0', 'r1']);
    await rollouts.setTargetStates(rollout.id, [{ target: { namespace: 'default', name: 'r0' }, to: 'PROGRESSING', from: 'PENDING' }]);
    await rollouts.setTargetStates(rollout.id, [{ target: { namespace: 'default', name: 'r0' }, to: 'SUCCEEDED', from: 'PROGRESSING' }]);
    const before = await log.lastEventId();
    // A stale writer: it saw r0 in flight and r1 pending.
    await expect(
      rollouts.setTargetStates(rollout.id, [
        { target: { namespace: 'default', name: 'r1' }, to: 'PROGRESSING', from: 'PENDING' },
        { target: { namespace: 'default', name: 'r0' }, to: 'SUCCEEDED', from: 'PROGRESSING' },
      ]),
    ).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/default\/r0 .* is SUCCEEDED, not PROGRESSING/) });
    expect((await rollouts.allTargets(rollout.id)).map((t) => `${t.name}:${t.state}`).sort()).toEqual(['r0:SUCCEEDED', 'r1:PENDING']);
    expect(await log.lastEventId()).toBe(before);
  });
}

describe('RolloutService.setTargetStates on SQLite', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-service-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  setTargetStatesContract(() => openDatabase(`file:${path.join(dir, 's.db')}`));
});

describeWithPostgres('RolloutService.setTargetStates on PostgreSQL', (server) => {
  setTargetStatesContract(async () => openDatabase(await server().createDatabase()));
});
