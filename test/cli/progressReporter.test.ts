import { describe, expect, it } from 'vitest';
import type { RolloutView } from '../../src/cli/operations.js';
import { createProgressReporter } from '../../src/cli/progressReporter.js';
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
