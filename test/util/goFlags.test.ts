import { describe, expect, it } from 'vitest';
import { mapStringBool, parseGoBool, parseGoFlags } from '../../src/util/goFlags.js';

describe("Go's flag package", () => {
  const set = { flags: { 'feature-gates': 'value', 'enable-webhook': 'bool', 'num-reconciles': 'value' }, unknown: 'error' } as const;

  it('reads -x and --x, =value and a separate value, bools without one; keeps every occurrence', () => {
    const parsed = parseGoFlags(['-enable-webhook', '--num-reconciles', '3', '--feature-gates=A=true', '-feature-gates', 'B=false'], set);
    expect(parsed).toEqual({
      values: new Map([
        ['enable-webhook', ['true']],
        ['num-reconciles', ['3']],
        ['feature-gates', ['A=true', 'B=false']],
      ]),
      rest: [],
    });
  });

  it('stops at -- and at the first non-flag argument', () => {
    expect(parseGoFlags(['--enable-webhook', '--', '--num-reconciles=2'], set)).toMatchObject({ rest: ['--num-reconciles=2'] });
    expect(parseGoFlags(['serve', '--enable-webhook'], set)).toMatchObject({ rest: ['serve', '--enable-webhook'], values: new Map() });
  });

  it('fails as flag.Parse does: an undefined flag, a bad bool, a missing value, bad syntax', () => {
    expect(parseGoFlags(['--nope'], set)).toEqual(new Error('flag provided but not defined: -nope'));
    expect(parseGoFlags(['--enable-webhook=yes'], set)).toEqual(new Error('invalid boolean value "yes" for -enable-webhook: parse error'));
    expect(parseGoFlags(['--num-reconciles'], set)).toEqual(new Error('flag needs an argument: -num-reconciles'));
    expect(parseGoFlags(['---x'], set)).toEqual(new Error('bad flag syntax: ---x'));
    expect(parseGoFlags(['--nope', 'v'], { ...set, unknown: 'lenient' })).toMatchObject({ values: new Map([['nope', ['v']]]) });
  });

  it('parses bools as strconv.ParseBool', () => {
    for (const t of ['1', 't', 'T', 'TRUE', 'true', 'True']) expect(parseGoBool(t)).toBe(true);
    for (const f of ['0', 'f', 'F', 'FALSE', 'false', 'False']) expect(parseGoBool(f)).toBe(false);
    for (const x of ['yes', 'on', 'tRUE', '']) expect(parseGoBool(x)).toBeUndefined();
  });
});

describe("component-base's MapStringBool", () => {
  it('adds every occurrence to one map; a later pair wins; items trimmed, empty ones skipped', () => {
    expect(mapStringBool(['A=true, B=1', 'C=f,,A=false'])).toEqual(
      new Map([
        ['A', false],
        ['B', true],
        ['C', false],
      ]),
    );
  });

  it('refuses a malformed pair or a value ParseBool refuses', () => {
    expect((mapStringBool(['A']) as Error).message).toBe('invalid argument "A" for "--feature-gates" flag: malformed pair, expect string=bool');
    expect((mapStringBool(['A=yes']) as Error).message).toBe(
      'invalid argument "A=yes" for "--feature-gates" flag: invalid value of A: yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
    );
  });
});
