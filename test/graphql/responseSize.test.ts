import { describe, expect, it } from 'vitest';
import { exceedsJsonBytes } from '../../src/graphql/responseSize.js';

describe('exceedsJsonBytes', () => {
  const values: unknown[] = [
    null,
    { a: 1, b: 'two', c: [true, null, { d: 'x'.repeat(100) }] },
    Array.from({ length: 200 }, (_, i) => ({ id: String(i), payload: { message: `event ${i}`, n: i } })),
  ];

  it('agrees with JSON.stringify within its margin: never says "no" to more bytes than the limit', () => {
    for (const value of values) {
      const size = JSON.stringify(value).length;
      expect(exceedsJsonBytes(value, size * 3)).toBe(false);
      // It over-counts a little (numbers as 8, separators), never under: below the real size it always says yes.
      expect(exceedsJsonBytes(value, Math.floor(size * 0.9))).toBe(true);
    }
  });

  it('counts a shared object once per place it appears, as it would be written, and stops early', () => {
    const big = { spec: 'y'.repeat(250_000) };
    const answer = Object.fromEntries(Array.from({ length: 29 }, (_, i) => [`a${i}`, big]));
    expect(exceedsJsonBytes(answer, 4 * 1024 * 1024)).toBe(true);
    expect(exceedsJsonBytes({ a0: big }, 4 * 1024 * 1024)).toBe(false);
  });
});
