import { describe, expect, it } from 'vitest';
import { connectionOf, connectionOfItems } from '../../src/graphql/resolvers/connection.js';
import { ValidationError } from '../../src/errors.js';
import { pageByKey, pageOfRows } from '../../src/util/pagination.js';

const pools = ['b/x', 'a/z', 'a/y', 'c/w'].map((key) => ({ namespace: key.split('/')[0]!, name: key.split('/')[1]! }));
const keyOf = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

describe('pageByKey', () => {
  it('walks an unordered list in key order, page by page, each cursor resuming after its item', () => {
    const first = pageByKey(pools, keyOf, 2, undefined, 100);
    expect(first.items.map((e) => keyOf(e.node))).toEqual(['a/y', 'a/z']);
    expect(first).toMatchObject({ hasNextPage: true, totalCount: 4, endCursor: first.items[1]!.cursor });
    const second = pageByKey(pools, keyOf, 2, first.endCursor, 100);
    expect(second.items.map((e) => keyOf(e.node))).toEqual(['b/x', 'c/w']);
    expect(second.hasNextPage).toBe(false);
    const past = pageByKey(pools, keyOf, 2, second.endCursor, 100);
    expect(past).toEqual({ items: [], hasNextPage: false, endCursor: null, totalCount: 4 });
  });

  it('resumes after a key that has gone meanwhile, and refuses a cursor it did not make', () => {
    const cursor = pageByKey([...pools, { namespace: 'a', name: 'zz' }], keyOf, 3, undefined, 100).endCursor;
    expect(pageByKey(pools, keyOf, 5, cursor, 100).items.map((e) => keyOf(e.node))).toEqual(['b/x', 'c/w']);
    expect(() => pageByKey(pools, keyOf, 5, 'not-a-cursor', 100)).toThrowError(ValidationError);
    expect(() => pageByKey(pools, keyOf, 0, undefined, 100)).toThrowError(/first/);
  });
});

describe('pageOfRows', () => {
  it('reads the extra row as "another page follows" and maps the rest', () => {
    expect(pageOfRows([1, 2, 3], 2, (n) => n * 10)).toEqual({ items: [10, 20], hasNextPage: true });
    expect(pageOfRows([1, 2], 2)).toEqual({ items: [1, 2], hasNextPage: false });
  });
});

describe('connections', () => {
  it('carry the edges, pageInfo and totalCount where there is one', () => {
    const page = pageByKey(pools, keyOf, 1, undefined, 100);
    expect(connectionOf(page)).toEqual({ edges: page.items, pageInfo: { hasNextPage: true, endCursor: page.items[0]!.cursor }, totalCount: 4 });
    const { totalCount: _, ...withoutCount } = page;
    expect(connectionOf(withoutCount)).not.toHaveProperty('totalCount');
  });

  it('give plain items their cursors; an empty page ends where the caller asked', () => {
    const edge = (n: number) => ({ cursor: String(n), node: { id: n } });
    expect(connectionOfItems({ items: [7, 8], hasNextPage: true }, edge)).toEqual({
      edges: [edge(7), edge(8)],
      pageInfo: { hasNextPage: true, endCursor: '8' },
    });
    expect(connectionOfItems({ items: [], hasNextPage: false }, edge, '41').pageInfo).toEqual({ hasNextPage: false, endCursor: '41' });
    expect(connectionOfItems({ items: [], hasNextPage: false }, edge).pageInfo.endCursor).toBeNull();
  });
});
