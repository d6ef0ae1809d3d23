import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_REPEATED_SELECTIONS, repeatedSelection } from '../../src/graphql/repeatedSelections.js';

const times = (n: number, text: string) => Array.from({ length: n }, () => text).join(' ');

describe('repeatedSelection', () => {
  it('allows a response name up to the limit and names it past it', () => {
    expect(repeatedSelection(parse(`{ ${times(MAX_REPEATED_SELECTIONS, 'serverInfo { __typename }')} }`))).toBeUndefined();
    expect(repeatedSelection(parse(`{ ${times(MAX_REPEATED_SELECTIONS + 1, 'serverInfo { __typename }')} }`))).toEqual({
      name: 'serverInfo',
      count: MAX_REPEATED_SELECTIONS + 1,
    });
  });

  it('counts what inline fragments and spread fragments bring into a set, each fragment once, and not aliases', () => {
    const half = Math.ceil((MAX_REPEATED_SELECTIONS + 1) / 2);
    const spread = `{ ${times(half, 'id')} ...F ...F } fragment F on Query { ${times(half, 'id: __typename')} }`;
    expect(repeatedSelection(parse(spread))?.name).toBe('id');
    const inline = `{ ${times(half, 'x: __typename')} ... on Query { ${times(half, 'x: __typename')} } }`;
    expect(repeatedSelection(parse(inline))?.name).toBe('x');
    const aliases = `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expect(repeatedSelection(parse(aliases))).toBeUndefined();
  });

  it('looks into nested sets and fragment definitions, and ends on fragment cycles', () => {
    expect(repeatedSelection(parse(`{ serverInfo { ${times(MAX_REPEATED_SELECTIONS + 1, 'version')} } }`))?.name).toBe('version');
    expect(repeatedSelection(parse('{ ...A } fragment A on Query { ...B __typename } fragment B on Query { ...A __typename }'))).toBeUndefined();
  });
});
