import { describe, expect, it } from 'vitest';
import { EvaluationError, evaluateCondition, NoDataSignal, parseCondition } from '../../src/analysis/condition.js';
import { ValidationError } from '../../src/errors.js';

const check = (text: string, result: number | number[]) => evaluateCondition(parseCondition(text, 'c'), result);

function refusal(text: string): ValidationError {
  try {
    parseCondition(text, 'spec.metrics[0].successCondition');
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('BAD_USER_INPUT');
    expect((error as ValidationError).details.field).toBe('spec.metrics[0].successCondition');
    return error as ValidationError;
  }
  throw new Error(`${text} was accepted`);
}

describe('analysis conditions: the subset of Argo expressions Prometheus templates use', () => {
  it('evaluates comparisons, arithmetic, len, isNaN, && and ||, and the word forms and/or/not', () => {
    expect(check('result[0] >= 0.95', [0.97])).toBe(true);
    expect(check('result[0] >= 0.95', [0.9])).toBe(false);
    expect(check('result < 5', 4)).toBe(true);
    expect(check('len(result) > 0 && result[0] < 0.05', [0.01])).toBe(true);
    expect(check('len(result) > 1 && result[1] / result[0] <= 1.3', [10, 12])).toBe(true);
    expect(check('len(result) >= 2 and result[1] - result[0] > 5', [10, 12])).toBe(false);
    expect(check('result[0] * 100 % 7 == 2', [0.09])).toBe(true);
    expect(check('not (result[0] > 1) or false', [2])).toBe(false);
    expect(check('-result[0] < -1', [2])).toBe(true);
    expect(check('isNaN(result[0]) || result[0] < 0.05', [Number.NaN])).toBe(true);
    expect(check('isInf(result)', Number.POSITIVE_INFINITY)).toBe(true);
    expect(check('abs(asInt(result[0])) == 3', [-3.7])).toBe(true);
    expect(check('1e3 == 1000 && .5 == 0.5', [1])).toBe(true);
  });

  it('never compares NaN as a number: a comparison that meets NaN is no data, either side, every operator', () => {
    for (const text of ['result[0] < 0.05', 'result[0] >= 0.05', '0.05 > result[0]', 'result[0] == result[0]', 'result[0] != 1', 'result[0] + 1 > 0']) {
      expect(() => check(text, [Number.NaN]), text).toThrow(NoDataSignal);
    }
    // `||` stops before the comparison when isNaN holds; `&&` stops when its left is false.
    expect(check('!isNaN(result[0]) && result[0] > 1', [Number.NaN])).toBe(false);
  });

  it('reports a condition that does not fit the result as an evaluation error', () => {
    expect(() => check('result[0] > 1', 3)).toThrow(EvaluationError);
    expect(() => check('result > 1', [1, 2])).toThrow(EvaluationError);
    expect(() => check('len(result) > 1 && result[1] > 0', [1])).not.toThrow();
    expect(() => check('result[0] + 1', [1])).toThrow(/not true or false/);
    expect(() => check('result[0] && true', [1])).toThrow(EvaluationError);
  });

  it('refuses an index without a length guard on its left, but not result[0] (an empty vector is no data)', () => {
    expect(refusal('result[1] > 0.5').message).toMatch(/result\[1\] is not guarded: write `len\(result\) > 1 && …`/);
    refusal('len(result) > 0 && result[1] > 0.5');
    refusal('result[1] > 0.5 && len(result) > 1');
    refusal('len(result) > 1 || result[1] > 0.5');
    expect(() => parseCondition('result[0] > 0.5', 'c')).not.toThrow();
    expect(() => parseCondition('len(result) >= 3 && result[2] > 0.5', 'c')).not.toThrow();
    expect(() => parseCondition('2 < len(result) && result[2] > 0.5', 'c')).not.toThrow();
    expect(() => parseCondition('len(result) == 2 && (result[1] > 0 || result[0] > 0)', 'c')).not.toThrow();
  });

  it('refuses what is outside the subset, with the position', () => {
    expect(refusal('result[0] > "0.5"').message).toMatch(/strings are not part of the supported subset/);
    expect(refusal('foo(result) > 1').message).toMatch(/unknown name "foo" at 1/);
    expect(refusal('process.exit(1)').message).toMatch(/unexpected "\." at 8/);
    expect(refusal('constructor > 1').message).toMatch(/unknown name "constructor"/);
    expect(refusal('all(result, {# > 1})').message).toMatch(/unknown name "all"|unexpected/);
    expect(refusal('result[i] > 1').message).toMatch(/whole number/);
    expect(refusal('1 < result[0] < 2').message).toMatch(/do not chain/);
    expect(refusal('(result[0] > 1').message).toMatch(/expected "\)"/);
    expect(refusal('').message).toMatch(/is empty/);
    expect(refusal('x'.repeat(2000)).message).toMatch(/longer than/);
  });

  it('finds the threshold the result is compared with', () => {
    expect(parseCondition('result[0] >= 0.95', 'c').threshold).toBe(0.95);
    expect(parseCondition('len(result) > 0 && 0.05 > result[0]', 'c').threshold).toBe(0.05);
    expect(parseCondition('isNaN(result[0])', 'c').threshold).toBeUndefined();
  });
});
