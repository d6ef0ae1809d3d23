import { describe, expect, it } from 'vitest';
import type { RolloutTarget } from '../../src/domain/RolloutService.js';
import { clusterOutcomes as engineOutcomes } from '../../src/domain/waves/engineStage.js';
import { clusterOutcomes, describeApproval, approvalConfigOf, isExcludedStarter, mayDecide } from '../../src/ui/client/runModel.js';
import { definitionOf, windowInputOf, windowLines } from '../../src/ui/client/windowPolicyText.js';

/**
 * What the run page and the window form compute without the server (src/ui/client/runModel.ts, windowPolicyText.ts):
 * a cluster's outcome is the engine's, for every mix of target states; a decision is offered only where the API could
 * accept it; the form's lines become the API's input.
 */
const STATES = ['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'] as const;

/** Every multiset of up to `size` target states. */
function mixes(size: number): (typeof STATES)[number][][] {
  if (size === 0) return [[]];
  const shorter = mixes(size - 1);
  return [
    ...shorter,
    ...shorter
      .filter((m) => m.length === size - 1)
      .flatMap((m) => STATES.filter((s) => STATES.indexOf(s) >= STATES.indexOf(m.at(-1) ?? 'PENDING')).map((s) => [...m, s])),
  ];
}

describe('the run page', () => {
  it("tells each cluster's outcome exactly as the engine does, for every mix of up to four target states", () => {
    const all = mixes(4).filter((m) => m.length > 0);
    expect(all.length).toBeGreaterThan(100);
    for (const states of all) {
      const targets = states.map((state, i) => ({ cluster: 'edge-1', state, finishedAt: ['SUCCEEDED', 'FAILED'].includes(state) ? new Date(i) : null }));
      const engine = engineOutcomes(targets as unknown as RolloutTarget[]).get('edge-1')?.outcome;
      expect(clusterOutcomes(targets).get('edge-1'), states.join(',')).toBe(engine);
    }
  });

  it('offers a decision only at a waiting approval gate of a run still going, to a role the gate accepts', () => {
    const gate = (config: unknown, state = 'WAITING', type = 'APPROVAL') => ({ type, config, state });
    expect(mayDecide(gate({}), 'deployer', true)).toBe(true);
    expect(mayDecide(gate({}), 'admin', true)).toBe(true);
    expect(mayDecide(gate({}), 'viewer', true)).toBe(false);
    expect(mayDecide(gate({ role: 'admin' }), 'deployer', true)).toBe(false);
    expect(mayDecide(gate({}, 'PASSED'), 'admin', true)).toBe(false);
    expect(mayDecide(gate({}), 'admin', false)).toBe(false);
    expect(mayDecide(gate({ seconds: 5 }, 'WAITING', 'TIMED_WAIT'), 'admin', true)).toBe(false);
    expect(mayDecide(gate({}), undefined, true)).toBe(false);
    // The run's starter, where the gate excludes it (the default): no decision offered, whatever its role.
    expect(isExcludedStarter(gate({}), 'admin', 'admin')).toBe(true);
    expect(mayDecide(gate({}), 'admin', true, isExcludedStarter(gate({}), 'admin', 'admin'))).toBe(false);
    expect(isExcludedStarter(gate({ excludeStarter: false }), 'admin', 'admin')).toBe(false);
    expect(isExcludedStarter(gate({}), 'approver', 'admin')).toBe(false);
    expect(isExcludedStarter(gate({}), 'admin', null)).toBe(false);
    expect(isExcludedStarter(gate({}), undefined, 'admin')).toBe(false);
    expect(isExcludedStarter(gate({ seconds: 5 }, 'WAITING', 'TIMED_WAIT'), 'admin', 'admin')).toBe(false);
    expect(describeApproval(approvalConfigOf({}))).toBe('1 approval by distinct deployer tokens, not the run’s starter');
    expect(describeApproval(approvalConfigOf({ required: 2, role: 'admin', excludeStarter: false, deadline: '24h', onDeadline: 'WAIT' }))).toBe(
      '2 approvals by distinct admin tokens; deadline 24h, then WAIT',
    );
  });
});

describe('the maintenance-window form', () => {
  const fields = { name: ' freeze ', kind: 'DENY' as const, timeZone: '', clusterSelector: 'env=prod', weekly: '', cron: '', ranges: '' };

  it('turns one window a line into the API input, leaving out what is empty', () => {
    expect(
      windowInputOf({
        ...fields,
        timeZone: 'Europe/Berlin',
        weekly: 'SAT,SUN 00:00 24:00\n\n  MON 22:00 02:00  ',
        cron: '0 22 * * 1-5 4h',
        ranges: '2026-12-24T00:00 2026-12-27T00:00',
      }),
    ).toEqual({
      name: 'freeze',
      kind: 'DENY',
      timeZone: 'Europe/Berlin',
      clusterSelector: 'env=prod',
      weekly: [
        { days: ['SAT', 'SUN'], start: '00:00', end: '24:00' },
        { days: ['MON'], start: '22:00', end: '02:00' },
      ],
      cron: [{ schedule: '0 22 * * 1-5', duration: '4h' }],
      ranges: [{ from: '2026-12-24T00:00', to: '2026-12-27T00:00' }],
    });
    expect(windowInputOf(fields)).toEqual({ name: 'freeze', kind: 'DENY', clusterSelector: 'env=prod' });
  });

  it('refuses a line of the wrong shape, naming it', () => {
    expect(() => windowInputOf({ ...fields, weekly: 'SAT 00:00' })).toThrow(/^weekly line 1: write DAYS START END/);
    expect(() => windowInputOf({ ...fields, cron: '0 22 * * 4h' })).toThrow(/^cron line 1: /);
    expect(() => windowInputOf({ ...fields, ranges: 'a b\nc' })).toThrow(/^range line 2: /);
  });

  it('reads a stored definition back as one line per window, whatever it holds', () => {
    const definition = definitionOf({
      weekly: [{ days: ['SAT'], start: '00:00', end: '24:00' }],
      cron: [{ schedule: '0 1 * * *', duration: '1h' }],
      ranges: 'x',
    });
    expect(definition).toMatchObject({ timeZone: null, clusterSelector: null, ranges: [] });
    expect(windowLines(definition)).toEqual(['SAT 00:00–24:00', 'cron 0 1 * * * for 1h']);
    expect(definitionOf(null)).toEqual({ timeZone: null, clusterSelector: null, weekly: [], cron: [], ranges: [] });
  });
});
