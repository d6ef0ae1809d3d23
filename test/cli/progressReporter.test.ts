import { describe, expect, it } from 'vitest';
import type { RolloutView } from '../../src/cli/operations.js';
import { coloursAllowed, createProgressReporter, paint } from '../../src/cli/progressReporter.js';
import { rolloutView } from './rolloutView.js';

const rollout = (state: RolloutView['state'], succeeded: number, progressing = 0): RolloutView =>
  rolloutView({
    state,
    progress: { total: 4, pending: 4 - succeeded - progressing, progressing, succeeded, failed: 0, skipped: 0, cancelled: 0, percent: (succeeded / 4) * 100 },
  });

function sink() {
  let out = '';
  const write = (s: string) => {
    out += s;
  };
  return { stream: { write }, out: () => out };
}

describe('progress reporter', () => {
  it('writes one plain line per visible change when not on a terminal', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, false, () => new Date('2026-11-30T00:00:00Z'));
    reporter.update(rollout('PROGRESSING', 0, 1));
    reporter.update(rollout('PROGRESSING', 0, 1));
    reporter.update(rollout('PROGRESSING', 2, 1));
    reporter.update(rollout('SUCCEEDED', 4));
    reporter.done();
    expect(s.out().split('\n').filter(Boolean)).toEqual([
      '2026-11-30T00:00:00.000Z rollout ro_1 PROGRESSING 0% (0/4 succeeded, 0 failed, 1 in progress)',
      '2026-11-30T00:00:00.000Z rollout ro_1 PROGRESSING 50% (2/4 succeeded, 0 failed, 1 in progress)',
      '2026-11-30T00:00:00.000Z rollout ro_1 SUCCEEDED 100% (4/4 succeeded, 0 failed)',
    ]);
    expect(s.out()).not.toContain('\r');
  });

  it('redraws a bar in place on a terminal and ends its line when done', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, true);
    reporter.update(rollout('PROGRESSING', 1));
    reporter.notice('live updates interrupted; reconnecting');
    reporter.update(rollout('SUCCEEDED', 4));
    reporter.done();
    const out = s.out();
    expect(out).toContain(`[${'█'.repeat(6)}${'░'.repeat(18)}]  25%`);
    expect(out).toContain(`[${'█'.repeat(24)}] 100%`);
    expect(out).toContain('\r\x1b[2Klive updates interrupted; reconnecting\n');
    expect(out.split('\r\x1b[2K').length - 1).toBeGreaterThanOrEqual(3);
    expect(out.endsWith('\n')).toBe(true);
  });

  it('cuts the redrawn line to the terminal width so that it never wraps', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, true, undefined, () => 40);
    reporter.update(rollout('PROGRESSING', 1));
    const line = s.out().replace('\r\x1b[2K', '');
    expect(line.length).toBe(39);
    expect(line.endsWith('…')).toBe(true);
  });
});

describe('per-target progress', () => {
  const at = () => new Date('2026-11-30T00:00:00Z');

  it('writes one line per target change in a CI log, with the error of a failed one, and no colour codes', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, false, at);
    reporter.update(rollout('PROGRESSING', 0, 1));
    reporter.targets([{ target: 'default/net-1', state: 'PROGRESSING' }], ['default/net-1'], []);
    reporter.targets([{ target: 'default/net-1', state: 'SUCCEEDED' }], [], []);
    reporter.targets(
      [{ target: 'default/net-2', state: 'FAILED', error: 'ImagePullBackOff' }],
      [],
      [{ target: 'default/net-2', state: 'FAILED', error: 'ImagePullBackOff' }],
    );
    expect(s.out().split('\n').filter(Boolean).slice(1)).toEqual([
      '2026-11-30T00:00:00.000Z   default/net-1 PROGRESSING',
      '2026-11-30T00:00:00.000Z   default/net-1 SUCCEEDED',
      '2026-11-30T00:00:00.000Z   default/net-2 FAILED: ImagePullBackOff',
    ]);
    expect(s.out()).not.toContain('\x1b[');
  });

  it('on a terminal, redraws a block: the bar, the targets in flight and the failures, moving up over the last block', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, true, at, () => 120, true);
    reporter.update(rollout('PROGRESSING', 0, 2));
    reporter.targets([], ['default/net-1', 'default/net-2'], []);
    const afterTwo = s.out();
    expect(afterTwo).toContain('\n  default/net-1  \x1b[33mPROGRESSING\x1b[0m\n  default/net-2  \x1b[33mPROGRESSING\x1b[0m');
    reporter.targets([], ['default/net-2'], [{ target: 'default/net-1', state: 'FAILED', error: 'deadline exceeded' }]);
    const redraw = s.out().slice(afterTwo.length);
    // Back up the two target rows of the last block, clear it, draw the new one.
    expect(redraw.startsWith('\x1b[2A\r\x1b[2K\x1b[J')).toBe(true);
    expect(redraw).toContain('  default/net-1  \x1b[31mFAILED\x1b[0m  deadline exceeded');
    reporter.done();
    expect(s.out().endsWith('\n')).toBe(true);
  });

  it('counts the targets in flight it has no room for', () => {
    const s = sink();
    const reporter = createProgressReporter(s.stream, true, at, () => 120);
    reporter.update(rollout('PROGRESSING', 0, 4));
    reporter.targets(
      [],
      Array.from({ length: 12 }, (_, i) => `default/net-${i}`),
      [],
    );
    expect(s.out()).toContain('  … 4 more in progress');
    expect(s.out()).not.toContain('default/net-8');
  });

  it('uses colours only on a terminal without NO_COLOR or TERM=dumb', () => {
    expect(coloursAllowed(true, {})).toBe(true);
    expect(coloursAllowed(false, {})).toBe(false);
    expect(coloursAllowed(true, { NO_COLOR: '1' })).toBe(false);
    expect(coloursAllowed(true, { TERM: 'dumb' })).toBe(false);
    expect(paint('FAILED', false)).toBe('FAILED');
  });
});
