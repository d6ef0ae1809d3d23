import { describe, expect, it } from 'vitest';
import { compileRule, RuleEvalError } from '../../../src/sim/crd/celRules.js';

const holds = (rule: string, self: unknown, oldSelf?: unknown) => compileRule(rule)!.evaluate(self, oldSelf);

describe('CEL rules of the simulator', () => {
  it.each([
    ['self < 3', 2, true],
    ['self < 3', 3, false],
    ['self <= 3', 3, true],
    ['self > 3', 3, false],
    ['self >= 3', 3, true],
    ['self + 2 == 5', 3, true],
    ['self - 2 == 1', 3, true],
    ['self * 2 == 6', 3, true],
    ['self / 2 == 1', 3, true],
    ['self % 2 == 1', 3, true],
    ["self < 'b'", 'a', true],
    ["self <= 'a'", 'a', true],
    ["self > 'a'", 'a', false],
    ["self >= 'b'", 'a', false],
    ["self + '-x' == 'a-x'", 'a', true],
    ['self + [3] == [1, 2, 3]', [1, 2], true],
  ])('%s with self = %j is %s', (rule, self, expected) => {
    expect(holds(rule, self)).toBe(expected);
  });

  it.each([
    ["self < 'a'", 1],
    ['self - 1 == 0', 'a'],
    ["self + 'a' == 'a'", 1],
  ])('%s with self = %j has no overload', (rule, self) => {
    expect(() => holds(rule, self)).toThrow(RuleEvalError);
  });
});
