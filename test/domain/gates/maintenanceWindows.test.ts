import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../../src/errors.js';
import { decide, isActive, parseWindowPolicies, type WindowPolicyInput } from '../../../src/domain/gates/maintenanceWindows.js';

const at = (iso: string) => new Date(iso);
const policies = (...inputs: WindowPolicyInput[]) => parseWindowPolicies(inputs);
const openAt = (input: WindowPolicyInput[], iso: string, labels: Record<string, string> = {}) => decide(parseWindowPolicies(input), labels, at(iso)).open;

function refusal(inputs: WindowPolicyInput[]): { code: string; field: unknown; message: string } {
  try {
    parseWindowPolicies(inputs);
  } catch (error) {
    const e = error as { code: string; details: { field: unknown }; message: string };
    return { code: e.code, field: e.details.field, message: e.message };
  }
  throw new Error('accepted');
}

describe('maintenance windows on wall clocks', () => {
  it('opens a weekly window across midnight on the day it starts and closes it the next morning', () => {
    const friday = [{ name: 'friday-night', kind: 'ALLOW' as const, timeZone: 'Europe/Berlin', weekly: [{ days: ['FRI'], start: '22:00', end: '02:00' }] }];
    // 2026-12-04 is a Friday; Berlin is UTC+1 in December.
    expect(openAt(friday, '2026-12-04T20:59:00Z')).toBe(false);
    expect(openAt(friday, '2026-12-04T21:00:00Z')).toBe(true);
    expect(openAt(friday, '2026-12-05T00:30:00Z')).toBe(true); // Saturday 01:30 local
    expect(openAt(friday, '2026-12-05T01:00:00Z')).toBe(false); // Saturday 02:00 local
    expect(openAt(friday, '2026-12-05T21:30:00Z')).toBe(false); // Saturday 22:30: not a Friday
    const waiting = decide(policies(...friday), {}, at('2026-12-04T12:00:00Z'));
    expect(waiting).toMatchObject({ open: false, until: at('2026-12-04T21:00:00Z') });
    expect(waiting.reason).toContain('friday-night');
    expect(decide(policies(...friday), {}, at('2026-12-04T21:00:00Z')).until).toEqual(at('2026-12-05T01:00:00Z'));
  });

  it('never opens a window the clock jumps over, and opens one that starts inside the jump at the jump (Europe/Berlin, spring)', () => {
    // 2026-03-29: at 01:00Z Berlin's clock goes from 02:00 CET to 03:00 CEST.
    const skipped = [{ name: 'two-to-three', kind: 'ALLOW' as const, timeZone: 'Europe/Berlin', weekly: [{ days: ['SUN'], start: '02:00', end: '03:00' }] }];
    expect(openAt(skipped, '2026-03-29T00:59:00Z')).toBe(false);
    expect(openAt(skipped, '2026-03-29T01:00:00Z')).toBe(false);
    expect(decide(policies(...skipped), {}, at('2026-03-29T00:00:00Z')).until).toEqual(at('2026-04-05T00:00:00Z'));
    const straddling = [
      { name: 'half-two-to-four', kind: 'ALLOW' as const, timeZone: 'Europe/Berlin', weekly: [{ days: ['SUN'], start: '02:30', end: '04:00' }] },
    ];
    expect(openAt(straddling, '2026-03-29T00:59:00Z')).toBe(false);
    expect(openAt(straddling, '2026-03-29T01:00:00Z')).toBe(true); // 03:00 CEST
    expect(openAt(straddling, '2026-03-29T02:00:00Z')).toBe(false); // 04:00 CEST
    expect(decide(policies(...straddling), {}, at('2026-03-29T00:00:00Z')).until).toEqual(at('2026-03-29T01:00:00Z'));
  });

  it('keeps a window open for both passes of the hour the clock repeats (Europe/Berlin, autumn)', () => {
    // 2026-10-25: at 01:00Z Berlin's clock goes back from 03:00 CEST to 02:00 CET.
    const repeated = [{ name: 'two-to-three', kind: 'ALLOW' as const, timeZone: 'Europe/Berlin', weekly: [{ days: ['SUN'], start: '02:00', end: '03:00' }] }];
    expect(openAt(repeated, '2026-10-24T23:59:00Z')).toBe(false);
    expect(openAt(repeated, '2026-10-25T00:30:00Z')).toBe(true); // 02:30 CEST
    expect(openAt(repeated, '2026-10-25T01:30:00Z')).toBe(true); // 02:30 CET
    expect(openAt(repeated, '2026-10-25T02:00:00Z')).toBe(false); // 03:00 CET
    expect(decide(policies(...repeated), {}, at('2026-10-25T00:00:00Z')).until).toEqual(at('2026-10-25T02:00:00Z'));
  });

  it('follows America/New_York across both of its changes', () => {
    const daily = [
      {
        name: 'one-to-half-past',
        kind: 'ALLOW' as const,
        timeZone: 'America/New_York',
        weekly: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '01:00', end: '01:30' }],
      },
    ];
    // 2026-11-01: at 06:00Z the clock goes back from 02:00 EDT to 01:00 EST; 01:00–01:30 is shown twice.
    expect(openAt(daily, '2026-11-01T05:15:00Z')).toBe(true);
    expect(openAt(daily, '2026-11-01T05:45:00Z')).toBe(false);
    expect(openAt(daily, '2026-11-01T06:15:00Z')).toBe(true);
    expect(openAt(daily, '2026-11-01T06:30:00Z')).toBe(false);
    // 2026-03-08: at 07:00Z the clock jumps from 02:00 EST to 03:00 EDT; 01:00 EST is 06:00Z.
    expect(openAt(daily, '2026-03-08T06:10:00Z')).toBe(true);
    const overnight = [
      { name: 'two-to-three', kind: 'DENY' as const, timeZone: 'America/New_York', weekly: [{ days: ['SUN'], start: '02:00', end: '03:00' }] },
    ];
    expect(openAt(overnight, '2026-03-08T07:00:00Z')).toBe(true); // the denied hour never happens
  });

  it('lets a freeze inside an allow window deny, names it, and says when it ends', () => {
    const windows = [
      { name: 'always', kind: 'ALLOW' as const, weekly: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '00:00', end: '24:00' }] },
      { name: 'christmas', kind: 'DENY' as const, timeZone: 'Europe/Berlin', ranges: [{ from: '2026-12-24T00:00', to: '2026-12-27T00:00' }] },
    ];
    expect(openAt(windows, '2026-12-23T22:59:00Z')).toBe(true);
    const frozen = decide(policies(...windows), {}, at('2026-12-25T12:00:00Z'));
    expect(frozen).toMatchObject({ open: false, policy: 'christmas', until: at('2026-12-26T23:00:00Z') });
    expect(frozen.reason).toBe('inside DENY window policy "christmas"');
    expect(decide(policies(...windows), {}, at('2026-12-23T12:00:00Z')).until).toEqual(at('2026-12-23T23:00:00Z'));
  });

  it('applies a policy only to the clusters its selector picks; none applying means open for good', () => {
    const windows = [{ name: 'prod-nights', kind: 'ALLOW' as const, clusterSelector: 'env=prod', weekly: [{ days: ['SAT'], start: '01:00', end: '05:00' }] }];
    expect(openAt(windows, '2026-12-07T12:00:00Z', { env: 'prod' })).toBe(false);
    expect(decide(policies(...windows), { env: 'dev' }, at('2026-12-07T12:00:00Z'))).toEqual({
      open: true,
      reason: 'no window policy applies',
      policy: null,
      until: null,
    });
  });

  it('opens a cron window at each time the schedule names, for its duration', () => {
    const weeknights = [{ name: 'weeknights', kind: 'ALLOW' as const, cron: [{ schedule: '0 22 * * 1-5', duration: '4h' }] }];
    expect(openAt(weeknights, '2026-12-07T22:00:00Z')).toBe(true); // Monday 22:00
    expect(openAt(weeknights, '2026-12-08T01:59:00Z')).toBe(true);
    expect(openAt(weeknights, '2026-12-08T02:00:00Z')).toBe(false);
    expect(openAt(weeknights, '2026-12-05T23:00:00Z')).toBe(false); // Saturday
    expect(decide(policies(...weeknights), {}, at('2026-12-05T12:00:00Z')).until).toEqual(at('2026-12-07T22:00:00Z'));
  });

  it('does not fire a cron time the clock skips, and fires a repeated one once', () => {
    const halfPastTwo = [{ name: 'half-past-two', kind: 'ALLOW' as const, timeZone: 'Europe/Berlin', cron: [{ schedule: '30 2 * * *', duration: '1h' }] }];
    expect(openAt(halfPastTwo, '2026-03-28T01:45:00Z')).toBe(true); // Saturday 02:45 CET
    expect(openAt(halfPastTwo, '2026-03-29T01:15:00Z')).toBe(false); // 03:15 CEST: 02:30 never shown
    expect(openAt(halfPastTwo, '2026-10-25T01:29:00Z')).toBe(true); // from 00:30Z (02:30 CEST)
    expect(openAt(halfPastTwo, '2026-10-25T01:45:00Z')).toBe(false); // 02:45 CET: not fired again at 02:30 CET
  });

  it('reads a cron day as crontab does: either day field when both are restricted', () => {
    const firstOrMonday = policies({ name: 'first-or-monday', kind: 'ALLOW', cron: [{ schedule: '0 0 1 * MON', duration: '1h' }] })[0]!;
    expect(isActive(firstOrMonday, Date.parse('2026-12-01T00:30:00Z'))).toBe(true); // a Tuesday, the 1st
    expect(isActive(firstOrMonday, Date.parse('2026-12-07T00:30:00Z'))).toBe(true); // a Monday
    expect(isActive(firstOrMonday, Date.parse('2026-12-08T00:30:00Z'))).toBe(false);
  });

  it('reads a local range time inside a jump as the jump, and takes instants with an offset as given', () => {
    const [policy] = policies({
      name: 'freeze',
      kind: 'DENY',
      timeZone: 'Europe/Berlin',
      ranges: [{ from: '2026-03-29T02:30', to: '2026-03-29T12:00:00+02:00' }],
    });
    expect(isActive(policy!, Date.parse('2026-03-29T00:59:00Z'))).toBe(false);
    expect(isActive(policy!, Date.parse('2026-03-29T01:00:00Z'))).toBe(true);
    expect(isActive(policy!, Date.parse('2026-03-29T10:00:00Z'))).toBe(false);
  });

  it.each([
    [[{ name: 'a', kind: 'ALLOW', timeZone: 'Mars/Olympus', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] }], 'input.windows[0].timeZone'],
    [[{ name: 'a', kind: 'ALLOW', weekly: [{ days: ['MON'], start: '1:00', end: '02:00' }] }], 'input.windows[0].weekly[0].start'],
    [[{ name: 'a', kind: 'ALLOW', weekly: [{ days: ['MON'], start: '02:00', end: '02:00' }] }], 'input.windows[0].weekly[0].end'],
    [[{ name: 'a', kind: 'ALLOW', weekly: [{ days: ['MONDAY'], start: '01:00', end: '02:00' }] }], 'input.windows[0].weekly[0].days[0]'],
    [[{ name: 'a', kind: 'ALLOW', weekly: [{ days: [], start: '01:00', end: '02:00' }] }], 'input.windows[0].weekly[0].days'],
    [[{ name: 'a', kind: 'ALLOW', cron: [{ schedule: '61 * * * *', duration: '1h' }] }], 'input.windows[0].cron[0].schedule'],
    [[{ name: 'a', kind: 'ALLOW', cron: [{ schedule: '@daily', duration: '1h' }] }], 'input.windows[0].cron[0].schedule'],
    [[{ name: 'a', kind: 'ALLOW', cron: [{ schedule: '0 5-3 * * *', duration: '1h' }] }], 'input.windows[0].cron[0].schedule'],
    [[{ name: 'a', kind: 'ALLOW', cron: [{ schedule: '0 0 * * *', duration: '0m' }] }], 'input.windows[0].cron[0].duration'],
    [[{ name: 'a', kind: 'ALLOW', cron: [{ schedule: '0 0 * * *', duration: '32d' }] }], 'input.windows[0].cron[0].duration'],
    [[{ name: 'a', kind: 'ALLOW', ranges: [{ from: '2026-12-24T00:00', to: '2026-12-24T00:00' }] }], 'input.windows[0].ranges[0].to'],
    [[{ name: 'a', kind: 'ALLOW', ranges: [{ from: '2026-02-30T00:00', to: '2026-03-24T00:00' }] }], 'input.windows[0].ranges[0].from'],
    [
      [{ name: 'a', kind: 'ALLOW', clusterSelector: 'env in ()', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] }],
      'input.windows[0].clusterSelector',
    ],
    [[{ name: 'a', kind: 'MAYBE', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] }], 'input.windows[0].kind'],
    [[{ name: 'Not A Name', kind: 'ALLOW', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] }], 'input.windows[0].name'],
    [[{ name: 'a', kind: 'ALLOW' }], 'input.windows[0]'],
    [
      [
        { name: 'a', kind: 'ALLOW', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] },
        { name: 'a', kind: 'DENY', weekly: [{ days: ['MON'], start: '01:00', end: '02:00' }] },
      ],
      'input.windows[1].name',
    ],
  ])('refuses a bad policy with BAD_USER_INPUT naming the field (%#)', (inputs, field) => {
    const refused = refusal(inputs as WindowPolicyInput[]);
    expect(refused.code).toBe(ErrorCode.BadUserInput);
    expect(refused.field).toBe(field);
  });
});

describe('the next change decide() announces', () => {
  /** A small deterministic generator (mulberry32), so that a failure repeats. */
  function random(seed: number): () => number {
    let a = seed;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const zones = ['Europe/Berlin', 'America/New_York', 'UTC', 'Australia/Lord_Howe'];
  const days = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
  const hhmm = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

  it('holds until the instant it names and changes exactly there, across DST changes (80 random cases)', () => {
    const next = random(29);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    for (let round = 0; round < 80; round++) {
      const timeZone = pick(zones);
      const start = Math.floor(next() * 48) * 30;
      const end = (start + 30 + Math.floor(next() * 40) * 30) % 1440;
      const inputs: WindowPolicyInput[] = [
        { name: 'allow', kind: 'ALLOW', timeZone, weekly: [{ days: days.filter(() => next() < 0.4).concat(pick(days)), start: hhmm(start), end: hhmm(end) }] },
      ];
      if (next() < 0.5)
        inputs.push({
          name: 'deny',
          kind: 'DENY',
          timeZone,
          cron: [{ schedule: `${pick([0, 15, 30])} ${Math.floor(next() * 24)} * * *`, duration: pick(['15m', '2h', '1d']) }],
        });
      const parsed = parseWindowPolicies(inputs);
      // Around the DST changes of 2026 in the northern and the southern hemisphere.
      const now =
        Date.parse(pick(['2026-03-27T00:00:00Z', '2026-10-23T00:00:00Z', '2026-04-03T00:00:00Z', '2026-11-20T00:00:00Z'])) +
        Math.floor(next() * 4 * 24 * 60) * 60_000;
      const decision = decide(parsed, {}, new Date(now), 14 * 24 * 3_600_000);
      const until = decision.until?.getTime() ?? now + 14 * 24 * 3_600_000;
      for (let t = now; t < until; t += 15 * 60_000)
        expect(decide(parsed, {}, new Date(t), 0).open, `${JSON.stringify(inputs)} at ${new Date(t).toISOString()}`).toBe(decision.open);
      if (decision.until) {
        expect(decide(parsed, {}, new Date(until - 60_000), 0).open).toBe(decision.open);
        expect(decide(parsed, {}, decision.until, 0).open).toBe(!decision.open);
      }
    }
  });
});
