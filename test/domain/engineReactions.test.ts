import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reactToRolloutEvents } from '../../src/domain/engineReactions.js';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { RolloutEngine } from '../../src/domain/RolloutEngine.js';
import { RolloutLauncher, type RolloutPlan } from '../../src/domain/RolloutLauncher.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import { openDatabase, type Database } from '../../src/store/db.js';

/** The engine wired as the composition root wires it, with a work queue that only records what it is given. */
describe('the engine reacting to rollout events', () => {
  let dir: string;
  let db: Database;
  let rollouts: RolloutService;
  let launcher: RolloutLauncher;
  let enqueued: string[];

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-reactions-'));
    db = await openDatabase(`file:${path.join(dir, 'r.db')}`);
    const bus = new InProcessEventBus();
    rollouts = new RolloutService(db.store, new EventLog(db.store, bus), KIND_CONTRACTS);
    const engine = new RolloutEngine(rollouts, { info: () => {}, warn: () => {} });
    launcher = new RolloutLauncher(rollouts);
    enqueued = [];
    engine.connect((id) => enqueued.push(id), launcher);
    reactToRolloutEvents(bus, engine);
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const plan: RolloutPlan = {
    kind: 'AGENT_POOL',
    fromVersion: 'agent:v1',
    toVersion: 'agent:v2',
    selector: {},
    strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    targets: [{ namespace: 'default', name: 'pool-0', fromVersion: 'agent:v1', toVersion: 'agent:v2' }],
  };

  it('enqueues a new rollout exactly once', async () => {
    const { rollout } = await launcher.launch({ plan, cause: {}, request: plan });
    expect(enqueued).toEqual([rollout.id]);
  });

  it('enqueues a rollout once for each user action on it', async () => {
    const { rollout } = await launcher.launch({ plan, cause: {}, request: plan });
    await rollouts.pause(rollout.id);
    await rollouts.resume(rollout.id);
    await rollouts.abort(rollout.id);
    expect(enqueued).toEqual([rollout.id, rollout.id, rollout.id, rollout.id]);
  });

  it('enqueues nothing for a dry run or for a retry of a launched request', async () => {
    await launcher.launch({ plan, cause: {}, request: plan, dryRun: true });
    expect(enqueued).toEqual([]);
    const first = await launcher.launch({ plan, cause: {}, request: plan, idempotencyKey: { scope: 'anonymous', key: 'k1' } });
    const retry = await launcher.launch({ plan, cause: {}, request: plan, idempotencyKey: { scope: 'anonymous', key: 'k1' } });
    expect(retry).toMatchObject({ created: false, rollout: { id: first.rollout.id } });
    expect(enqueued).toEqual([first.rollout.id]);
  });
});
