import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { MEMBER_FLEET_ENV, memberPool, planMemberPools, registerMembers, untilRolloutEnded } from '../helpers/memberFleet.js';
import { until } from '../helpers/until.js';

/**
 * Attack 15, F5: a member black-holed long enough for its backoff to grow is probed again soon once targets of a
 * rollout wait on it (ROLLPLANE_MEMBER_CLUSTER_WAITING_PROBE_MS), so those targets are driven when it answers again
 * instead of failing at their deadline while its backoff runs out. The backoff here grows 5 s, 10 s, 20 s… and the
 * deadline is 20 s: without the shorter re-probe the member is still UNREACHABLE when the deadline passes (it was
 * restored after its third failed probe, whose backoff is 20 s).
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const MEMBER = 'edge-1';
const DEADLINE_SECONDS = 20;

describe('a member back from a black hole while targets wait on it (attack 15, F5)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member back soon '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: MEMBER, fleet: 'pools=2,nodes=2' }] });
    registerMembers(dir, fleet, [MEMBER], () => ({ tier: 'edge' }));
    app = await startTestApp({
      databaseFile: path.join(dir, 'rollplane.db'),
      env: {
        ...MEMBER_FLEET_ENV,
        ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '5000',
        ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS: '600000',
        ROLLPLANE_MEMBER_CLUSTER_WAITING_PROBE_MS: '300',
      },
    });
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const connection = () => app.memberClusters.connections.get(MEMBER)!;

  it('probes it again within the short interval while its targets wait, and they finish once it answers', async () => {
    await until('the member driven by its own runtime', () =>
      app.memberRuntimes?.snapshot().some((r) => r.cluster === MEMBER && r.running && r.kinds.includes('AGENT_POOL')),
    );
    const strategy = { ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL), maxUnavailable: '2', progressDeadlineSeconds: DEADLINE_SECONDS, autoRollback: false };
    // Planned while it answers (a bump would be refused UNAVAILABLE while it does not).
    const plan = await planMemberPools(app, [MEMBER], strategy, OLD, NEW);

    await fleet.set(MEMBER, 'blackhole');
    await until('the member UNREACHABLE', () => connection().health().state === 'UNREACHABLE');
    // Its first retry is a full backoff (5 s) away: nothing waits on it yet.
    expect(connection().snapshot().nextProbeInMs).toBeGreaterThanOrEqual(4_000);

    const launched = await app.domain.launcher.launch({ plan, cause: { actor: 'test' }, dryRun: false, supersede: false, request: {} });
    const id = launched.rollout.id;
    // Its targets wait (the engine asks why the member is not driven, and the member hears that work waits on it): it
    // is probed again within the short interval, however long its backoff grew.
    await until('three failed probes of the member', () => connection().snapshot().failures >= 3, { timeoutMs: 60_000 });
    const waiting = await app.domain.rollouts.allTargets(id);
    expect(waiting.map((t) => t.state)).toEqual(['PROGRESSING', 'PROGRESSING']);
    const scheduled = await until('the next probe scheduled', () => connection().snapshot().nextProbeInMs);
    expect(scheduled).toBeLessThanOrEqual(300);

    await fleet.set(MEMBER, 'ready');
    const done = await untilRolloutEnded(app, id);
    const targets = await app.domain.rollouts.allTargets(id);
    expect(targets.map((t) => [t.name, t.state, t.error])).toEqual([
      ['net-1', 'SUCCEEDED', null],
      ['net-2', 'SUCCEEDED', null],
    ]);
    expect(done.state).toBe('SUCCEEDED');
    for (const name of ['net-1', 'net-2']) expect(memberPool(fleet, MEMBER, name)?.status.agentPodRef.image).toBe(NEW);
    // Once it answered, its failures were forgotten: the next failure starts from the first backoff again.
    expect(connection().snapshot().failures).toBe(0);
  });
});
