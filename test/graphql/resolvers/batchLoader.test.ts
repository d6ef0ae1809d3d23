import { describe, expect, it } from 'vitest';
import { BatchLoader, perContext } from '../../../src/graphql/resolvers/batchLoader.js';

describe('BatchLoader', () => {
  const recording = () => {
    const batches: string[][] = [];
    const loader = new BatchLoader(
      async (keys: readonly string[]) => {
        batches.push([...keys]);
        return new Map(keys.filter((k) => k !== 'absent').map((k) => [k, k.toUpperCase()]));
      },
      (key) => `missing ${key}`,
    );
    return { batches, loader };
  };

  it('loads the keys asked for in one synchronous pass with one call, each key once', async () => {
    const { batches, loader } = recording();
    const values = await Promise.all(['a', 'b', 'a', 'c'].map((k) => loader.load(k)));
    expect(values).toEqual(['A', 'B', 'A', 'C']);
    expect(batches).toEqual([['a', 'b', 'c']]);
  });

  it('starts a new batch for keys asked for after the first one was sent, and caches nothing', async () => {
    const { batches, loader } = recording();
    await loader.load('a');
    await Promise.all([loader.load('a'), loader.load('b')]);
    expect(batches).toEqual([['a'], ['a', 'b']]);
  });

  it('answers a key the load left out with missing(key), or with its error', async () => {
    const { loader } = recording();
    expect(await Promise.all([loader.load('absent'), loader.load('x')])).toEqual(['missing absent', 'X']);
    const strict = new BatchLoader(
      async () => new Map<string, string>(),
      (key) => {
        throw new Error(`no ${key}`);
      },
    );
    await expect(strict.load('k')).rejects.toThrow('no k');
  });

  it('rejects every waiter of a batch whose load failed, and the next batch runs afresh', async () => {
    let fail = true;
    const loader = new BatchLoader(
      async (keys: readonly string[]) => {
        if (fail) throw new Error('store down');
        return new Map(keys.map((k) => [k, k]));
      },
      () => '',
    );
    const results = await Promise.allSettled([loader.load('a'), loader.load('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await loader.load('a')).toBe('a');
  });
});

describe('perContext', () => {
  it('gives one loader per context object', () => {
    let created = 0;
    const of = perContext((_ctx: object) => ++created);
    const a = {};
    const b = {};
    expect([of(a), of(a), of(b), of(b)]).toEqual([1, 1, 2, 2]);
  });
});
