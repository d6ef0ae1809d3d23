import { describe, expect, it } from 'vitest';
import {
  admit,
  decide,
  type Decision,
  finish,
  FULL_OBSERVATION_BELOW,
  halt,
  judged,
  observe,
  type Pass,
  prepare,
  requeueAfterMs,
  rollBack,
} from '../../src/domain/engineSteps.js';
import type { AgentPoolStrategy } from '../../src/kinds/agentPool/contract.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../src/domain/ports.js';
import type { EngineState, Rollout, RolloutTarget } from '../../src/domain/RolloutService.js';
import type { RolloutState, TargetState } from '../../src/domain/rolloutStates.js';
import { RolloutView } from '../../src/domain/RolloutView.js';

/** The engine's steps over passes built in memory: no store, no cluster, no server. */

const NOW = Date.parse('2026-12-05T00:00:00Z');

function rollout(state: RolloutState, strategy: Partial<AgentPoolStrategy> = {}, engineState: EngineState = {}): Rollout {
  const at = new Date(NOW);
  return {
    id: 'r1',
    kind: 'AGENT_POOL',
    state,
    fromVersion: 'agent:v1',
    toVersion: 'agent:v2',
    selector: {},
    strategy: { kind: 'AGENT_POOL', maxUnavailable: '2', progressDeadlineSeconds: 60, failureThreshold: 1, autoRollback: false, ...strategy },
    cause: {},
    idempotencyKey: null,
    rollbackOfId: null,
    message: null,
    engineState,
    createdAt: at,
    updatedAt: at,
    startedAt: at,
    finishedAt: null,
    startedBy: null,
  };
}

/** Targets from a string of state letters: P(ending), R (PROGRESSING), S(ucceeded), F(ailed), K (sKipped), C(ancelled). */
function targets(states: string, admittedAgoMs = 1000): RolloutTarget[] {
  const byLetter: Record<string, TargetState> = { P: 'PENDING', R: 'PROGRESSING', S: 'SUCCEEDED', F: 'FAILED', K: 'SKIPPED', C: 'CANCELLED' };
  return [...states].map((letter, i) => {
    const state = byLetter[letter]!;
    return {
      id: `t${i}`,
      rolloutId: 'r1',
      kind: 'AGENT_POOL',
      namespace: 'default',
      name: `pool-${i}`,
      ordinal: i,
      state,
      fromVersion: 'agent:v1',
      toVersion: 'agent:v2',
      attempts: state === 'PENDING' || state === 'SKIPPED' ? 0 : 1,
      skipReason: state === 'SKIPPED' ? 'held' : null,
      error: state === 'FAILED' ? `pool-${i} broke` : null,
      admittedAt: state === 'PENDING' || state === 'SKIPPED' ? null : new Date(NOW - admittedAgoMs),
      finishedAt: null,
    };
  });
}

/** A driver that reads only: observations by target name, a halt reason, unavailable targets outside the rollout. */
function driver(
  options: { halt?: string; observations?: Record<string, TargetObservation | Error>; unavailable?: number } = {},
): RolloutDriver & { asked: string[] } {
  const asked: string[] = [];
  return {
    kind: 'AGENT_POOL',
    asked,
    haltReason: async () => options.halt,
    admit: async () => {
      throw new Error('a step wrote to the cluster');
    },
    observe: async (target: AdmittedTarget) => {
      asked.push(target.name);
      const seen = options.observations?.[target.name] ?? { phase: 'progressing' };
      if (seen instanceof Error) throw seen;
      return seen;
    },
    unavailableOutsideRollout: async () => {
      asked.push('unavailableOutsideRollout');
      return options.unavailable ?? 0;
    },
  };
}

function pass(
  r: Rollout,
  states: string,
  extra: Partial<Pass> & { driver?: RolloutDriver; admittedAgoMs?: number; clusterOf?: (target: RolloutTarget, index: number) => string } = {},
): Pass & { progressing: string[] } {
  const progressing: string[] = [];
  // Clusters set before the view counts them (it keeps per-cluster counts with its own updates only).
  const planned = targets(states, extra.admittedAgoMs).map((t, i) => (extra.clusterOf ? { ...t, cluster: extra.clusterOf(t, i) } : t));
  return {
    rollout: r,
    driver: driver(),
    view: new RolloutView(planned, r.state),
    now: () => NOW,
    fullObservationMs: 5000,
    nextDeadline: Infinity,
    stillProgressing: (t) => progressing.push(t.name),
    progressing,
    ...extra,
  };
}

describe('halt', () => {
  it.each<[string, RolloutState, string | undefined, Decision]>([
    [
      'an active rollout the driver halts fails with its reason',
      'PROGRESSING',
      'pool selector changed',
      { do: 'transition', to: 'FAILED', message: 'pool selector changed' },
    ],
    ['a pending one too', 'PENDING', 'strategy not allowed', { do: 'transition', to: 'FAILED', message: 'strategy not allowed' }],
    ['a paused one too', 'PAUSED', 'gone', { do: 'transition', to: 'FAILED', message: 'gone' }],
    ['nothing halts an active rollout the driver lets go on', 'PROGRESSING', undefined, { do: 'nothing' }],
    ['an ended rollout is not asked about', 'ABORTED', 'gone', { do: 'nothing' }],
  ])('%s', async (_, state, reason, expected) => {
    expect(await halt({ rollout: rollout(state), driver: driver({ halt: reason }) })).toEqual(expected);
  });
});

describe('prepare', () => {
  it.each<[RolloutState, Decision['do']]>([
    ['PENDING', 'start'],
    ['PROGRESSING', 'nothing'],
    ['PAUSED', 'nothing'],
    ['FAILED', 'nothing'],
  ])('%s → %s', (state, expected) => {
    expect(prepare({ rollout: rollout(state), driver: driver() }).do).toBe(expected);
  });
});

describe('judged (the progress deadline)', () => {
  it.each<[string, TargetObservation, number, TargetObservation]>([
    ['progressing within the deadline stays progressing', { phase: 'progressing', message: 'pulling' }, 59_999, { phase: 'progressing', message: 'pulling' }],
    [
      'progressing at the deadline fails, with the message',
      { phase: 'progressing', message: 'pulling' },
      60_000,
      { phase: 'failed', reason: 'not converged within the progress deadline of 60s: pulling' },
    ],
    [
      'progressing past it without a message',
      { phase: 'progressing' },
      90_000,
      { phase: 'failed', reason: 'not converged within the progress deadline of 60s' },
    ],
    ['succeeded late is still succeeded', { phase: 'succeeded' }, 90_000, { phase: 'succeeded' }],
    ['failed stays failed with its own reason', { phase: 'failed', reason: 'ImagePullBackOff' }, 1, { phase: 'failed', reason: 'ImagePullBackOff' }],
  ])('%s', (_, observation, elapsed, expected) => {
    expect(judged(observation, elapsed, 60_000)).toEqual(expected);
  });
});

describe('observe', () => {
  it('records succeeded and failed targets, keeps the rest routed here with their deadline', async () => {
    const d = driver({
      observations: { 'pool-0': { phase: 'succeeded' }, 'pool-1': { phase: 'failed', reason: 'CrashLoopBackOff' }, 'pool-3': new Error('cache gone') },
    });
    const p = pass(rollout('PROGRESSING'), 'RRRRP', { driver: d });
    const decision = await observe(p);
    expect(decision.do).toBe('record');
    if (decision.do !== 'record') return;
    expect(decision.outcomes.changes.map((c) => [c.target.name, c.to, c.error])).toEqual([
      ['pool-0', 'SUCCEEDED', null],
      ['pool-1', 'FAILED', 'CrashLoopBackOff'],
    ]);
    // A target that cannot be observed counts as progressing (until its deadline).
    expect(p.progressing).toEqual(['pool-2', 'pool-3']);
    expect(decision.outcomes.allObservedAt).toBe(NOW);
    expect(decision.outcomes.nextDeadline).toBe(NOW - 1000 + 60_000);
  });

  it('fails a target that cannot be observed once its deadline passed, with the reason it could not', async () => {
    const p = pass(rollout('PROGRESSING'), 'R', { driver: driver({ observations: { 'pool-0': new Error('forbidden') } }), admittedAgoMs: 61_000 });
    const decision = await observe(p);
    expect(decision).toMatchObject({
      do: 'record',
      outcomes: { changes: [{ to: 'FAILED', error: 'not converged within the progress deadline of 60s: cannot observe: forbidden' }] },
    });
  });

  const many = 'R'.repeat(FULL_OBSERVATION_BELOW);
  it.each<[string, string, { lastFullObservation: number; earliestDeadline: number }, number | undefined, string[]]>([
    ['few in flight: all, every pass', 'RR', { lastFullObservation: NOW, earliestDeadline: Infinity }, NOW, ['pool-0', 'pool-1']],
    ['many in flight, observed all a moment ago: only the changed', many, { lastFullObservation: NOW - 10, earliestDeadline: Infinity }, undefined, ['pool-7']],
    [
      'many in flight, the full observation is due',
      many,
      { lastFullObservation: NOW - 5000, earliestDeadline: Infinity },
      NOW,
      [...many].map((_, i) => `pool-${i}`),
    ],
    ['many in flight, a deadline is due', many, { lastFullObservation: NOW - 10, earliestDeadline: NOW }, NOW, [...many].map((_, i) => `pool-${i}`)],
  ])('%s', async (_, states, schedule, allObservedAt, observed) => {
    const d = driver();
    const p = pass(rollout('PROGRESSING'), states, { driver: d });
    Object.assign(p.view, schedule);
    p.view.markChanged('default/pool-7');
    const decision = await observe(p);
    expect(decision).toMatchObject({ do: 'record', outcomes: { allObservedAt } });
    expect(d.asked).toEqual(observed);
    // The change marks were taken: the next pass starts afresh.
    expect(p.view.toObserve(false)).toEqual([]);
  });
});

describe('decide', () => {
  it.each<[string, Rollout, string, Decision]>([
    [
      'fails at the failure threshold, naming the first failure',
      rollout('PROGRESSING', { failureThreshold: 2 }),
      'SFRFP',
      { do: 'transition', to: 'FAILED', message: '2 target(s) failed (failure threshold 2); first: pool-1 broke' },
    ],
    [
      'fails a paused rollout at the threshold too',
      rollout('PAUSED'),
      'FP',
      { do: 'transition', to: 'FAILED', message: '1 target(s) failed (failure threshold 1); first: pool-0 broke' },
    ],
    [
      'threshold 0: failures never fail the rollout',
      rollout('PROGRESSING', { failureThreshold: 0 }),
      'FFP',
      { do: 'proceed', cap: Infinity, passCanary: false },
    ],
    ['below the threshold: goes on', rollout('PROGRESSING', { failureThreshold: 3 }), 'FFRP', { do: 'proceed', cap: Infinity, passCanary: false }],
    ['an ended rollout is left as it is', rollout('ABORTED'), 'FFC', { do: 'nothing' }],
    ['a paused rollout admits nothing', rollout('PAUSED'), 'SRP', { do: 'nothing' }],
    ['succeeds when nothing is pending or in flight', rollout('PROGRESSING'), 'SSK', { do: 'succeed', message: null, passCanary: false }],
    [
      'succeeds below the threshold, saying how many failed',
      rollout('PROGRESSING', { failureThreshold: 3 }),
      'SFS',
      { do: 'succeed', message: '1 target(s) failed, below the failure threshold of 3', passCanary: false },
    ],
    ['waits for targets in flight', rollout('PROGRESSING'), 'SR', { do: 'proceed', cap: Infinity, passCanary: false }],
    ['canary: admits only the canary targets at first', rollout('PROGRESSING', { canary: 3 }), 'SPPPP', { do: 'proceed', cap: 2, passCanary: false }],
    ['canary: waits for the canary targets in flight', rollout('PROGRESSING', { canary: 2 }), 'SRPP', { do: 'proceed', cap: 0, passCanary: false }],
    [
      'canary: pauses once the canary targets are done and more are pending',
      rollout('PROGRESSING', { canary: 2 }),
      'SSKPP',
      { do: 'pause at canary', message: 'canary: 2 of the first 2 target(s) upgraded; resume to continue' },
    ],
    [
      'canary: skipped and cancelled targets do not count as admitted',
      rollout('PROGRESSING', { canary: 2 }),
      'KSCPP',
      { do: 'proceed', cap: 1, passCanary: false },
    ],
    [
      'canary: a canary as large as the rollout succeeds without pausing',
      rollout('PROGRESSING', { canary: 2 }),
      'SS',
      { do: 'succeed', message: null, passCanary: false },
    ],
    [
      'canary: resumed after its pause, the whole strategy applies',
      rollout('PROGRESSING', { canary: 2 }, { canaryPaused: true }),
      'SSPP',
      { do: 'proceed', cap: Infinity, passCanary: true },
    ],
    [
      'canary: once passed, no cap',
      rollout('PROGRESSING', { canary: 2 }, { canaryPaused: true, canaryPassed: true }),
      'SSPP',
      { do: 'proceed', cap: Infinity, passCanary: false },
    ],
    ['canary 0 means none', rollout('PROGRESSING', { canary: 0 }), 'PPP', { do: 'proceed', cap: Infinity, passCanary: false }],
  ])('%s', (_, r, states, expected) => {
    expect(decide(pass(r, states))).toEqual(expected);
  });
});

describe('admit', () => {
  it.each<[string, Partial<AgentPoolStrategy>, string, number | undefined, number, string[], boolean]>([
    ['admits nothing when decide set no cap', {}, 'PPP', undefined, 0, [], false],
    ['fills maxUnavailable beside the targets in flight, in plan order', { maxUnavailable: '2' }, 'SRPPP', Infinity, 0, ['pool-2'], true],
    ['never admits skipped targets', { maxUnavailable: '3' }, 'PKPKP', Infinity, 0, ['pool-0', 'pool-2', 'pool-4'], true],
    ['a percentage of the changing targets (skipped ones do not count)', { maxUnavailable: '50%' }, 'PPPPKK', Infinity, 0, ['pool-0', 'pool-1'], true],
    ['maxConcurrent wins over maxUnavailable', { maxUnavailable: '1', maxConcurrent: 3 }, 'PPPP', Infinity, 0, ['pool-0', 'pool-1', 'pool-2'], true],
    ['within the canary cap', { maxUnavailable: '3' }, 'PPPP', 1, 0, ['pool-0'], true],
    ['targets unavailable outside the rollout count against the budget', { maxUnavailable: '3' }, 'PPPP', Infinity, 2, ['pool-0'], true],
    ['the cluster is not asked when the budget is spent', { maxUnavailable: '1' }, 'RPP', Infinity, 0, [], false],
    ['nor when nothing is pending', { maxUnavailable: '2' }, 'SR', Infinity, 0, [], false],
  ])('%s', async (_, strategy, states, cap, unavailable, expected, askedCluster) => {
    const d = driver({ unavailable });
    const p = pass(rollout('PROGRESSING', strategy), states, { driver: d, ...(cap === undefined ? {} : { admissionCap: cap }) });
    const decision = await admit(p);
    expect(decision.do === 'admit' ? decision.targets.map((t) => t.name) : []).toEqual(expected);
    if (expected.length === 0) expect(decision).toEqual({ do: 'nothing' });
    expect(d.asked.includes('unavailableOutsideRollout')).toBe(askedCluster);
  });

  it('notes when targets down outside the rollout alone hold it back, and clears the note once they do not (waitingFor)', async () => {
    const held = pass(rollout('PROGRESSING', { maxUnavailable: '1' }), 'PPP', { driver: driver({ unavailable: 1 }), admissionCap: Infinity });
    expect(await admit(held)).toEqual({ do: 'held back', down: 1 });
    // Noted already: nothing to write again.
    const noted = { ...rollout('PROGRESSING', { maxUnavailable: '1' }), engineState: { downOutside: 1 } } as Rollout;
    expect(await admit(pass(noted, 'PPP', { driver: driver({ unavailable: 1 }), admissionCap: Infinity }))).toEqual({ do: 'nothing' });
    // Now a target in flight takes the one slot: the note goes.
    expect(await admit(pass(noted, 'RPP', { driver: driver({ unavailable: 0 }), admissionCap: Infinity }))).toEqual({ do: 'held back', down: 0 });
  });

  it('admits the targets of a member nobody drives after every other pending one (a dead cluster holds no slot the healthy ones could use)', async () => {
    // pool-0 and pool-1 are in a cluster nobody drives now; plan order would admit them first.
    const deferredNames = new Set(['pool-0', 'pool-1']);
    const d: RolloutDriver = { ...driver(), deferAdmission: (t) => t.cluster === 'dead' };
    const dead = (t: RolloutTarget) => (deferredNames.has(t.name) ? 'dead' : 'local');
    const p = pass(rollout('PROGRESSING', { maxUnavailable: '2' }), 'PPPP', { driver: d, admissionCap: Infinity, clusterOf: dead });
    const first = await admit(p);
    expect(first.do === 'admit' ? first.targets.map((t) => t.name) : []).toEqual(['pool-2', 'pool-3']);
    // Once the others are admitted, the deferred ones fill the slots left (they fail at their deadline, naming the cluster).
    const later = pass(rollout('PROGRESSING', { maxUnavailable: '3' }), 'PPSS', { driver: d, admissionCap: Infinity, clusterOf: dead });
    const second = await admit(later);
    expect(second.do === 'admit' ? second.targets.map((t) => t.name) : []).toEqual(['pool-0', 'pool-1']);
    // Mixed: one slot of two for the healthy one, the next for a deferred one.
    const mixed = pass(rollout('PROGRESSING', { maxUnavailable: '2' }), 'PPPS', { driver: d, admissionCap: Infinity, clusterOf: dead });
    const third = await admit(mixed);
    expect(third.do === 'admit' ? third.targets.map((t) => t.name) : []).toEqual(['pool-2', 'pool-0']);
    // In flight in the dead cluster: they hold no slot of the rollout-wide limit (they can neither progress nor be seen).
    const stuck = pass(rollout('PROGRESSING', { maxUnavailable: '2' }), 'RRPP', { driver: d, admissionCap: Infinity, clusterOf: dead });
    const fourth = await admit(stuck);
    expect(fourth.do === 'admit' ? fourth.targets.map((t) => t.name) : []).toEqual(['pool-2', 'pool-3']);
  });

  it("lends a dead member's stuck slots to the healthy clusters only, never to that member's other targets (attack 17, M1)", async () => {
    // pool-0..2 in a member nobody drives, pool-0 in flight there; maxUnavailable 1.
    const d: RolloutDriver = { ...driver(), deferAdmission: (t) => t.cluster === 'dead' };
    const clusterOf = (_: RolloutTarget, i: number) => (i < 3 ? 'dead' : 'local');
    const mixed = pass(rollout('PROGRESSING', { maxUnavailable: '1' }), 'RPPP', { driver: d, admissionCap: Infinity, clusterOf });
    const first = await admit(mixed);
    expect(first.do === 'admit' ? first.targets.map((t) => t.name) : []).toEqual(['pool-3']);
    // Only the dead member's targets left: none admitted while one of them holds the only slot (before: one a pass,
    // all recreated at once when the member came back).
    const onlyDead = pass(rollout('PROGRESSING', { maxUnavailable: '1' }), 'RPPS', { driver: d, admissionCap: Infinity, clusterOf });
    expect((await admit(onlyDead)).do).toBe('nothing');
  });

  it('keeps each member cluster within maxUnavailablePerMemberCluster, beside the rollout-wide limit (issue 29)', async () => {
    // pool-0..2 in edge-1 (pool-0 in flight), pool-3..5 in edge-2: one per cluster at once, five rollout-wide.
    const p = pass(rollout('PROGRESSING', { maxUnavailable: '5', maxUnavailablePerMemberCluster: '1' }), 'RPPPPP', {
      admissionCap: Infinity,
      clusterOf: (_, i) => (i < 3 ? 'edge-1' : 'edge-2'),
    });
    const decision = await admit(p);
    expect(decision.do === 'admit' ? decision.targets.map((t) => t.name) : []).toEqual(['pool-3']);
    // A percentage of each cluster's changing targets (2 of edge-1's 4, rounded down; at least 1 of edge-2's 2).
    const q = pass(rollout('PROGRESSING', { maxUnavailable: '10', maxUnavailablePerMemberCluster: '50%' }), 'PPPPPP', {
      admissionCap: Infinity,
      clusterOf: (_, i) => (i < 4 ? 'edge-1' : 'edge-2'),
    });
    const second = await admit(q);
    expect(second.do === 'admit' ? second.targets.map((t) => t.name) : []).toEqual(['pool-0', 'pool-1', 'pool-4']);
  });
});

describe('rollBack', () => {
  it.each<[string, RolloutState, boolean, EngineState, Decision['do']]>([
    ['a failed rollout that asks for it', 'FAILED', true, {}, 'roll back'],
    ['not one that does not ask', 'FAILED', false, {}, 'nothing'],
    ['not once finished (its rollback started before)', 'FAILED', true, { finished: true }, 'nothing'],
    ['not an aborted one', 'ABORTED', true, {}, 'nothing'],
    ['not an active one', 'PROGRESSING', true, {}, 'nothing'],
  ])('%s', (_, state, autoRollback, engineState, expected) => {
    expect(rollBack(pass(rollout(state, { autoRollback }, engineState), 'F')).do).toBe(expected);
  });
});

describe('finish', () => {
  it.each<[string, RolloutState, EngineState, string, Decision['do']]>([
    ['an ended rollout with nothing in flight finishes', 'SUCCEEDED', {}, 'SSF', 'finish'],
    ['an aborted one lets its admitted targets finish first', 'ABORTED', {}, 'SRC', 'nothing'],
    ['and then finishes', 'ABORTED', {}, 'SSC', 'finish'],
    ['a finished one is not finished twice', 'FAILED', { finished: true }, 'F', 'nothing'],
    ['a paused rollout with nothing in flight rests', 'PAUSED', {}, 'SPP', 'rest'],
    ['a paused rollout with targets in flight keeps observing them', 'PAUSED', {}, 'SRP', 'nothing'],
    ['an active rollout goes on', 'PROGRESSING', {}, 'SPP', 'nothing'],
  ])('%s', (_, state, engineState, states, expected) => {
    expect(finish(pass(rollout(state, {}, engineState), states)).do).toBe(expected);
  });
});

describe('requeueAfterMs', () => {
  it.each<[string, number, number]>([
    ['no deadline: the poll interval', Infinity, 1000],
    ['a deadline after the poll: the poll interval', NOW + 5000, 1000],
    ['a deadline before the poll: the deadline', NOW + 300, 300],
    ['a deadline passed: soon, not at once', NOW - 50, 10],
  ])('%s', (_, deadline, expected) => {
    expect(requeueAfterMs(deadline, NOW, 1000)).toBe(expected);
  });
});
