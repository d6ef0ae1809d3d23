import { describe, expect, it } from 'vitest';
import { readPages } from '../../src/cli/pages.js';

/** A connection of `total` numbered nodes served `first` at a time, recording what was asked. */
function connection(total: number) {
  const asked: { first: number; after: string | null }[] = [];
  const read = async (first: number, after: string | null) => {
    asked.push({ first, after });
    const start = after === null ? 0 : Number(after);
    const nodes = Array.from({ length: Math.max(0, Math.min(first, total - start)) }, (_, i) => start + i);
    const end = start + nodes.length;
    return { edges: nodes.map((node) => ({ node })), pageInfo: { hasNextPage: end < total, endCursor: String(end) }, totalCount: total };
  };
  return { asked, read };
}

describe('readPages', () => {
  it('follows endCursor to the end of the connection', async () => {
    const c = connection(5);
    expect(await readPages(c.read, 2)).toEqual({ nodes: [0, 1, 2, 3, 4], totalCount: 5 });
    expect(c.asked).toEqual([
      { first: 2, after: null },
      { first: 2, after: '2' },
      { first: 2, after: '4' },
    ]);
  });

  it('asks for no more than the limit, and stops there', async () => {
    const c = connection(10);
    expect(await readPages(c.read, 4, 6)).toEqual({ nodes: [0, 1, 2, 3, 4, 5], totalCount: 10 });
    expect(c.asked.map((a) => a.first)).toEqual([4, 2]);
  });
});
