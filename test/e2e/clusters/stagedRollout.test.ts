import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { startCli } from '../../cli/cliHarness.js';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { collectEvents, MEMBER_FLEET_ENV, memberPool as memberPoolOf, registerMembers } from '../../helpers/memberFleet.js';
import { until } from '../../helpers/until.js';

/**
 * A staged bump over HTTP (issue 30, docs/waves.md): the real app on port 0 with three simulated member clusters,
 * each driven by its own runtime. Three waves (canary by label, one cluster behind an approval gate, the remainder);
 * the plan is frozen and shown by a dry run; a wave starts only once the one before ended on recorded outcomes; the
 * gate holds the run until approved; a failing wave pauses the run and the next wave does not start.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const BAD = 'rancher/harvester-vm-dhcp-agent:bad';
const MEMBERS = ['edge-1', 'edge-2', 'edge-3'];

const BUMP = `mutation ($input: BumpAgentImageInput!) {
  bumpAgentImage(input: $input) {
    created dryRun rollout { id state }
    plan { cluster name action reason }
    wavePlan { waves { name clusters maxConcurrency remainder state before { type } } excluded failurePolicy }
  }
}`;
const ROLLOUT = `query ($id: ID!) { rollout(id: $id) {
  state message
  wavePlan { waves { name state reason startedAt finishedAt } }
  gates { key type state reason decisions { by role decision comment } }
  targets(first: 20) { edges { node { cluster name state } } }
} }`;

describe('a staged rollout across member clusters', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane staged rollout '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: MEMBERS.map((name) => ({ name, fleet: 'pools=2,nodes=2' })) });
    registerMembers(dir, fleet, MEMBERS, (name) => ({ tier: 'edge', ring: name.slice(-1) }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=2,nodes=2' } });
    await until('every member READY and driven by its own runtime', () => membersDriven(MEMBERS));
  });

  /** READY in the registry and driven by a runtime: a runtime keeps running through its cache grace (ADR 0055). */
  const membersDriven = async (names: readonly string[]) => {
    const clusters: { name: string; health: { state: string } }[] = (await gql(app.url, '{ clusters { name health { state } } }')).data.clusters;
    return names.every(
      (name) =>
        clusters.some((c) => c.name === name && c.health.state === 'READY') &&
        app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL')),
    );
  };
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const image = (cluster: string, name: string) => memberPoolOf(fleet, cluster, name)?.status.agentPodRef.image;
  const bump = (input: Record<string, unknown>) => gql(app.url, BUMP, { input });
  const rolloutCount = async () => (await gql(app.url, '{ rollouts(first: 1) { totalCount } }')).data.rollouts.totalCount as number;
  const collect = (match: (e: StoredEvent) => boolean, done: (seen: StoredEvent[]) => boolean) => collectEvents(app, match, done);

  it('runs three waves in order, holds at an approval gate until approved, and shows the frozen plan', async () => {
    const input = {
      image: NEW,
      memberClusters: { labelSelector: 'tier=edge' },
      strategy: { maxUnavailable: '100%', autoRollback: false },
      waveStrategy: {
        waves: [
          { name: 'canary', clusters: { labelSelector: 'ring=1' } },
          // With authentication off every caller is `anonymous`, who also started the run: let it approve.
          { name: 'early', clusters: { names: ['edge-2'] }, before: { type: 'APPROVAL', config: { excludeStarter: false } } },
        ],
      },
    };
    const dry = await bump({ ...input, dryRun: true });
    expect(dry.errors).toBeUndefined();
    expect(dry.data.bumpAgentImage.wavePlan).toEqual({
      waves: [
        { name: 'canary', clusters: ['edge-1'], maxConcurrency: 1, remainder: false, state: 'PENDING', before: null },
        { name: 'early', clusters: ['edge-2'], maxConcurrency: 1, remainder: false, state: 'PENDING', before: { type: 'APPROVAL' } },
        { name: 'remainder', clusters: ['edge-3'], maxConcurrency: 1, remainder: true, state: 'PENDING', before: null },
      ],
      excluded: [],
      failurePolicy: 'PAUSE',
    });
    expect(await rolloutCount()).toBe(0);
    // The CLI takes the same strategy from a file and prints the waves above the plan.
    const file = path.join(dir, 'waves.yaml');
    writeFileSync(file, stringify(input.waveStrategy));
    const cli = await startCli(['bump', 'agent-image', NEW, '--cluster-selector', 'tier=edge', '--wave-strategy', file, '--dry-run', '--url', app.url]).done;
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('waves (3; on a failed wave: PAUSE):');
    expect(cli.stdout).toContain('  1. canary: edge-1 (1 at once; tolerates 0 failed)');
    expect(cli.stdout).toContain('  2. early: edge-2 (1 at once; tolerates 0 failed; before: APPROVAL)');
    expect(cli.stdout).toContain('  3. remainder: edge-3 (1 at once; tolerates 0 failed)');
    expect(await rolloutCount()).toBe(0);

    const gateWaiting = collect(
      (e) => e.type === EventType.GateWaiting,
      (seen) => seen.length > 0,
    );
    const ended = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED', 'PAUSED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    const run = await bump(input);
    expect(run.errors).toBeUndefined();
    const id: string = run.data.bumpAgentImage.rollout.id;
    const [waiting] = await gateWaiting;
    expect(waiting!.payload).toMatchObject({ gateKey: 'before:early', type: 'APPROVAL' });
    // At the gate: the canary wave is done on recorded outcomes, nothing of the next waves was touched.
    for (const name of ['net-1', 'net-2']) {
      expect(image('edge-1', name)).toBe(NEW);
      expect(image('edge-2', name)).toBe(OLD);
      expect(image('edge-3', name)).toBe(OLD);
    }
    const held = (await gql(app.url, ROLLOUT, { id })).data.rollout;
    expect(held.state).toBe('PROGRESSING');
    expect(held.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['SUCCEEDED', 'RUNNING', 'PENDING']);
    expect(held.gates).toEqual([
      { key: 'before:early', type: 'APPROVAL', state: 'WAITING', reason: expect.stringMatching(/waiting for 1 more approval/), decisions: [] },
    ]);

    const approved = await gql(
      app.url,
      'mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "before:early", comment: "looks good") { state decisions { by decision comment } } }',
      {
        id,
      },
    );
    expect(approved.errors).toBeUndefined();
    expect(approved.data.approveGate).toEqual({ state: 'PASSED', decisions: [{ by: 'anonymous', decision: 'APPROVE', comment: 'looks good' }] });
    const [end] = await ended;
    expect(end!.payload.to).toBe('SUCCEEDED');
    for (const cluster of MEMBERS) for (const name of ['net-1', 'net-2']) expect(image(cluster, name)).toBe(NEW);

    // The history: each wave started after the one before finished, and no pool of a wave was recreated before its wave.
    const events = (
      await gql(app.url, 'query ($id: ID!) { events(filter: { rolloutId: $id }, first: 500) { edges { node { id type cluster payload } } } }', { id })
    ).data.events.edges.map((e: { node: { id: string; type: string; cluster: string | null; payload: Record<string, unknown> } }) => e.node);
    const at = (type: string, wave: string) =>
      events.findIndex((e: { type: string; payload: Record<string, unknown> }) => e.type === type && e.payload.waveName === wave);
    const firstAdmission = (cluster: string) =>
      events.findIndex(
        (e: { type: string; cluster: string | null; payload: Record<string, unknown> }) =>
          e.type === 'TargetStateChanged' && e.cluster === cluster && e.payload.to === 'PROGRESSING',
      );
    expect(at('WaveFinished', 'canary')).toBeLessThan(at('WaveStarted', 'early'));
    expect(at('WaveFinished', 'early')).toBeLessThan(at('WaveStarted', 'remainder'));
    expect(at('WaveFinished', 'canary')).toBeLessThan(firstAdmission('edge-2'));
    expect(at('WaveFinished', 'early')).toBeLessThan(firstAdmission('edge-3'));
    const gateApproved = events.findIndex((e: { type: string }) => e.type === 'GateApproved');
    expect(gateApproved).toBeLessThan(firstAdmission('edge-2'));
    const done = (await gql(app.url, ROLLOUT, { id })).data.rollout;
    expect(done.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);

    // A decision once the run ended is CONFLICT, and changes nothing.
    const late = await gql(app.url, 'mutation ($id: ID!) { rejectGate(rolloutId: $id, gate: "before:early") { state } }', { id });
    expect(late.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  });

  it('a failing wave pauses the run, and the next wave does not start', async () => {
    const ended = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED', 'PAUSED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    const run = await bump({
      image: BAD,
      memberClusters: { labelSelector: 'tier=edge' },
      strategy: { maxUnavailable: '100%', progressDeadlineSeconds: 3, autoRollback: false },
      waveStrategy: {
        waves: [
          { name: 'canary', clusters: { names: ['edge-1'] } },
          { name: 'rest', clusters: { labelSelector: 'ring in (2,3)' } },
        ],
      },
      allowDowngrade: true,
    });
    expect(run.errors).toBeUndefined();
    const id: string = run.data.bumpAgentImage.rollout.id;
    const [end] = await ended;
    expect(end!.payload.to).toBe('PAUSED');
    const paused = (await gql(app.url, ROLLOUT, { id })).data.rollout;
    expect(paused.message).toMatch(/wave canary failed: 1 cluster failed \(edge-1\)/);
    expect(paused.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['FAILED', 'PENDING']);
    const states = paused.targets.edges.map((e: { node: { cluster: string; state: string } }) => `${e.node.cluster}:${e.node.state}`);
    expect(states.sort()).toEqual(['edge-1:FAILED', 'edge-1:FAILED', 'edge-2:PENDING', 'edge-2:PENDING', 'edge-3:PENDING', 'edge-3:PENDING']);
    for (const cluster of ['edge-2', 'edge-3']) for (const name of ['net-1', 'net-2']) expect(image(cluster, name)).toBe(NEW);
    const aborted = await gql(app.url, 'mutation ($id: ID!) { abortRollout(id: $id) { state } }', { id });
    expect(aborted.data.abortRollout.state).toBe('ABORTED');
  });

  it('holds a wave behind a maintenance window, says why, and admits it once the window allows', async () => {
    const freezeEnds = Date.now() + 4000;
    const created = await gql(app.url, 'mutation ($input: MaintenanceWindowInput!) { createMaintenanceWindow(input: $input) { name kind definition } }', {
      input: {
        name: 'freeze-3',
        kind: 'DENY',
        clusterSelector: 'ring=3',
        ranges: [{ from: new Date(freezeEnds - 60_000).toISOString(), to: new Date(freezeEnds).toISOString() }],
      },
    });
    expect(created.errors).toBeUndefined();
    expect(created.data.createMaintenanceWindow).toMatchObject({ name: 'freeze-3', kind: 'DENY', definition: { clusterSelector: 'ring=3' } });
    const refused = await gql(
      app.url,
      'mutation { createMaintenanceWindow(input: { name: "x", kind: ALLOW, weekly: [{ days: ["FUN"], start: "22:00", end: "02:00" }] }) { name } }',
    );
    expect(refused.errors?.[0]?.message).toMatch(/input\.weekly\[0\]\.days\[0\]/);
    const clusters = await gql(app.url, '{ clusters { name maintenanceWindow { open policy until } } }');
    const edge3 = clusters.data.clusters.find((c: { name: string }) => c.name === 'edge-3');
    expect(edge3.maintenanceWindow).toEqual({ open: false, policy: 'freeze-3', until: new Date(freezeEnds).toISOString() });

    const ended = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED', 'PAUSED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    const run = await bump({
      image: 'rancher/harvester-vm-dhcp-agent:v0.4.0',
      memberClusters: { labelSelector: 'tier=edge' },
      strategy: { maxUnavailable: '100%', autoRollback: false },
      waveStrategy: {
        waves: [
          { name: 'two', clusters: { names: ['edge-2'] } },
          { name: 'three', clusters: { names: ['edge-3'] } },
        ],
        remainder: 'EXCLUDED',
      },
    });
    expect(run.errors).toBeUndefined();
    expect(run.data.bumpAgentImage.wavePlan.excluded).toEqual(['edge-1']);
    expect(
      run.data.bumpAgentImage.plan
        .filter((p: { cluster: string }) => p.cluster === 'edge-1')
        .map((p: { action: string; reason: string }) => [p.action, p.reason]),
    ).toEqual([
      ['skip', 'member cluster edge-1 is in no wave (remainder: EXCLUDED)'],
      ['skip', 'member cluster edge-1 is in no wave (remainder: EXCLUDED)'],
    ]);
    const id: string = run.data.bumpAgentImage.rollout.id;
    // Polled at the until helper's pace; the rollout says why it waits while edge-3 is frozen.
    const waiting = await until('the run waits for the window', async () => {
      const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { waitingFor } }', { id })).data.rollout;
      return /freeze-3/.test(r.waitingFor ?? '') ? r.waitingFor : undefined;
    });
    expect(Date.now()).toBeLessThan(freezeEnds);
    expect(waiting).toMatch(/wave three: no cluster may start now \(edge-3: .*freeze-3/);
    expect(image('edge-3', 'net-1')).toBe(NEW);
    const [end] = await ended;
    expect(end!.payload.to).toBe('SUCCEEDED');
    const events = (
      await gql(
        app.url,
        'query ($id: ID!) { events(filter: { rolloutId: $id, cluster: "edge-3" }, first: 50) { edges { node { type createdAt payload } } } }',
        { id },
      )
    ).data.events.edges.map((e: { node: { type: string; createdAt: string; payload: Record<string, unknown> } }) => e.node);
    const admitted = events.find((e: { type: string; payload: Record<string, unknown> }) => e.type === 'TargetStateChanged' && e.payload.to === 'PROGRESSING');
    expect(Date.parse(admitted.createdAt)).toBeGreaterThanOrEqual(freezeEnds);
    const deleted = await gql(app.url, 'mutation { deleteMaintenanceWindow(name: "freeze-3") { name } }');
    expect(deleted.data.deleteMaintenanceWindow.name).toBe('freeze-3');
    expect((await gql(app.url, '{ maintenanceWindows { name } }')).data.maintenanceWindows).toEqual([]);
  });

  it('an offline cluster does not block its wave forever: the run waits for it as long as asked, says why, then skips it', async () => {
    const ended = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED', 'PAUSED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    const gateWaiting = collect(
      (e) => e.type === EventType.GateWaiting,
      (seen) => seen.length > 0,
    );
    // Planned while every member answers (a bump refuses a cluster it cannot read); edge-3 goes offline mid-run.
    const run = await bump({
      image: 'rancher/harvester-vm-dhcp-agent:v0.5.0',
      memberClusters: { names: ['edge-2', 'edge-3'] },
      strategy: { maxUnavailable: '100%', autoRollback: false },
      waveStrategy: {
        waves: [
          { name: 'first', clusters: { names: ['edge-2'] } },
          { name: 'offline', clusters: { names: ['edge-3'] }, before: { type: 'APPROVAL', config: { excludeStarter: false } } },
        ],
        unreachableWaitSeconds: 4,
        unreachableAfterWait: 'SKIP',
      },
    });
    expect(run.errors).toBeUndefined();
    const id: string = run.data.bumpAgentImage.rollout.id;
    const plan = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { wavePlan { unreachable unreachableWaitSeconds unreachableAfterWait } } }', { id }))
      .data.rollout.wavePlan;
    expect(plan).toEqual({ unreachable: 'WAIT', unreachableWaitSeconds: 4, unreachableAfterWait: 'SKIP' });
    await gateWaiting;
    await fleet.set('edge-3', 'unreachable');
    try {
      const health = async (name: string) =>
        (await gql(app.url, '{ clusters { name health { state } } }')).data.clusters.find((c: { name: string }) => c.name === name)?.health.state;
      await until('edge-3 is UNREACHABLE in the registry', async () => (await health('edge-3')) === 'UNREACHABLE');
      const approved = await gql(app.url, 'mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "before:offline") { state } }', { id });
      expect(approved.data.approveGate.state).toBe('PASSED');
      // While it waits, the rollout says for what (polled at the until helper's pace).
      const waiting = await until('the run says it waits for edge-3', async () => {
        const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state waitingFor } }', { id })).data.rollout;
        return /edge-3 is UNREACHABLE/.test(r.waitingFor ?? '') || r.state !== 'PROGRESSING' ? r : undefined;
      });
      expect(waiting.waitingFor).toMatch(/member cluster edge-3 is UNREACHABLE \(unreachable: WAIT until .*, then SKIP\)/);
      const [end] = await ended;
      expect(end!.payload.to).toBe('SUCCEEDED');
      const done = (await gql(app.url, ROLLOUT, { id })).data.rollout;
      expect(done.message).toBe('skipped (each target says why): edge-3');
      const states = done.targets.edges.map((e: { node: { cluster: string; state: string } }) => `${e.node.cluster}:${e.node.state}`);
      expect(states.sort()).toEqual(['edge-2:SUCCEEDED', 'edge-2:SUCCEEDED', 'edge-3:SKIPPED', 'edge-3:SKIPPED']);
      for (const name of ['net-1', 'net-2']) expect(image('edge-2', name)).toBe('rancher/harvester-vm-dhcp-agent:v0.5.0');
      const skipped = (
        await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { targets(first: 10, state: SKIPPED) { edges { node { cluster error } } } } }', { id })
      ).data.rollout.targets.edges.map((e: { node: { cluster: string; error: string } }) => e.node);
      expect(skipped.map((t: { error: string }) => t.error)).toEqual([
        expect.stringMatching(/^member cluster edge-3 is UNREACHABLE: waited 4s since .* \(unreachable: WAIT, then SKIP\)$/),
        expect.stringMatching(/^member cluster edge-3 is UNREACHABLE: waited 4s since .* \(unreachable: WAIT, then SKIP\)$/),
      ]);
    } finally {
      // Back for the next test: READY, and driven by its runtime again (a bump reads its caches).
      await fleet.set('edge-3', 'ready');
      await until('edge-3 READY and driven by its runtime again', () => membersDriven(['edge-3']));
    }
  });

  it('refuses a bad wave strategy with its field path and starts nothing', async () => {
    const before = await rolloutCount();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ waves: [{ name: 'a', clusters: { names: ['edge-9'] } }] }, /waves\[0\]\.clusters\[0\]: no member cluster named "edge-9" is in the run/],
      [{ waves: [{ name: 'a', clusters: { names: ['edge-1'] }, maxConcurrency: 'many' }] }, /waves\[0\]\.maxConcurrency/],
      [
        { waves: [{ name: 'a', clusters: { names: ['edge-1'] }, after: { type: 'TIMED_WAIT', config: { seconds: -1 } } }] },
        /waves\[0\]\.after\.config\.seconds/,
      ],
    ];
    for (const [waveStrategy, message] of cases) {
      const res = await bump({ image: NEW, memberClusters: { labelSelector: 'tier=edge' }, waveStrategy, allowDowngrade: true });
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(waveStrategy)).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toMatch(message);
    }
    expect(await rolloutCount()).toBe(before);
  });
});
