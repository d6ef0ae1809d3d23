import { describe, expect, it } from 'vitest';
import { MemberAnswers } from '../../src/domain/memberAnswers.js';

describe('MemberAnswers', () => {
  const driver = {};
  it('keeps an answer for the same driver, change count and rollout state, within its age', () => {
    let now = 0;
    const answers = new MemberAnswers<number>(1_000, 10, () => now);
    answers.set('r1', 'm1', { driver, changes: 3, of: 'PROGRESSING' }, 5);
    expect(answers.get('r1', 'm1', { driver, changes: 3, of: 'PROGRESSING' })).toEqual({ value: 5 });
    expect(answers.get('r1', 'm1', { driver, changes: 4, of: 'PROGRESSING' })).toBeUndefined();
    expect(answers.get('r1', 'm1', { driver, changes: 3, of: 'PAUSED' })).toBeUndefined();
    // A new runtime (after a reconnect) counts its caches' changes from 0 again: its driver tells it apart.
    expect(answers.get('r1', 'm1', { driver: {}, changes: 3, of: 'PROGRESSING' })).toBeUndefined();
    expect(answers.get('r1', 'm2', { driver, changes: 3, of: 'PROGRESSING' })).toBeUndefined();
    now = 999;
    expect(answers.get('r1', 'm1', { driver, changes: 3, of: 'PROGRESSING' })).toEqual({ value: 5 });
    now = 1_000;
    expect(answers.get('r1', 'm1', { driver, changes: 3, of: 'PROGRESSING' })).toBeUndefined();
  });

  it("forgets a rollout's answers, and the oldest rollout's past its bound", () => {
    const answers = new MemberAnswers<number>(Number.POSITIVE_INFINITY, 2);
    const stamp = { driver, changes: 1 };
    answers.set('r1', 'm1', stamp, 1);
    answers.set('r2', 'm1', stamp, 2);
    answers.forget('r2');
    expect(answers.get('r2', 'm1', stamp)).toBeUndefined();
    answers.set('r3', 'm1', stamp, 3);
    answers.set('r4', 'm1', stamp, 4);
    expect(answers.get('r1', 'm1', stamp)).toBeUndefined();
    expect(answers.get('r3', 'm1', stamp)).toEqual({ value: 3 });
    expect(answers.get('r4', 'm1', stamp)).toEqual({ value: 4 });
  });
});
