import { describe, expect, it } from 'vitest';
import { compileNamePattern, type NamePattern } from '../../src/analysis/metricNamePattern.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { ValidationError } from '../../src/errors.js';

function pattern(source: string): NamePattern {
  const compiled = compileNamePattern(source);
  if (typeof compiled === 'string') throw new Error(compiled);
  return compiled;
}

/**
 * `spec.dryRun[].metricName` (metricNamePattern.ts): the patterns people write match as a regular expression would,
 * in time linear in the pattern; what could take exponential time is refused (attack 19, F1: `^(a|aa)+$` against a
 * 47-character name froze the service for 150 s).
 */
describe("dryRun's metricName patterns", () => {
  it('match as the regular expression would, whole names only', () => {
    const cases: [string, string, boolean][] = [
      ['.*', 'anything', true],
      ['err.*', 'errors', true],
      ['err.*', 'lease-errors', false],
      ['^errors$', 'errors', true],
      ['errors', 'errors-2', false],
      ['lease-rate|errors', 'errors', true],
      ['lease-rate|errors', 'lease', false],
      ['error-\\d+', 'error-12', true],
      ['error-\\d+', 'error-', false],
      ['[a-c]+x?', 'abcab', true],
      ['[a-c]+x?', 'abcx', true],
      ['[^-]*', 'no-dash', false],
      ['a\\.b', 'a.b', true],
      ['a\\.b', 'axb', false],
      ['\\w+-5xx', 'total_2-5xx', true],
      ['', '', true],
    ];
    for (const [source, name, expected] of cases) {
      expect(pattern(source).test(name), `${source} ~ ${name}`).toBe(expected);
      expect(new RegExp(`^(?:${source})$`).test(name), `the regular expression ${source} ~ ${name}`).toBe(expected);
    }
  });

  it('refuses what it cannot match in linear time, saying what it takes', () => {
    for (const source of ['^(a|aa)+$', '(ab)*', 'a{2,5}', 'a**', 'x\\1', 'a[b', '[z-a]']) {
      const refused = compileNamePattern(source);
      expect(typeof refused, source).toBe('string');
    }
    expect(compileNamePattern('(a|aa)+')).toMatch(/not supported.*literal characters/);
  });

  it('matches a long adversarial name against many quantifiers at once (no backtracking)', () => {
    const many = pattern(`${'a*'.repeat(120)}b`);
    // A backtracking engine takes combinations of 120 quantifiers over 63 characters here.
    expect(many.test('a'.repeat(63))).toBe(false);
    expect(many.test(`${'a'.repeat(62)}b`)).toBe(true);
  });

  it('refuses the attack template at submit with the field and what the syntax takes', () => {
    const template = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisTemplate',
      metadata: { name: 't' },
      spec: {
        metrics: [{ name: `${'a'.repeat(47)}-`, provider: { prometheus: { address: 'http://prometheus:9090', query: 'up' } } }],
        dryRun: [{ metricName: '^(a|aa)+$' }],
      },
    };
    try {
      parseAnalysisTemplate(template);
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.field).toMatch(/spec\.dryRun\[0\]\.metricName$/);
      expect((error as Error).message).toMatch(/not supported/);
    }
  });
});
