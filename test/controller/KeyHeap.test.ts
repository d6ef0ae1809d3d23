import { describe, expect, it } from 'vitest';
import { KeyHeap } from '../../src/controller/KeyHeap.js';

describe('KeyHeap', () => {
  it('pops entries in (readyAt, seq) order whatever the push order', () => {
    const heap = new KeyHeap();
    // A fixed pseudo-random sequence with many ties on readyAt.
    const entries = Array.from({ length: 2000 }, (_, seq) => ({ readyAt: (seq * 7919) % 97, seq, key: `k${seq}` }));
    for (const e of entries) heap.push(e);
    const popped = [];
    for (let e = heap.pop(); e; e = heap.pop()) popped.push(e);
    const expected = [...entries].sort((a, b) => a.readyAt - b.readyAt || a.seq - b.seq);
    expect(popped.map((e) => e.key)).toEqual(expected.map((e) => e.key));
    expect(heap.size).toBe(0);
  });

  it('interleaves pushes and pops correctly', () => {
    const heap = new KeyHeap();
    let seq = 0;
    const out: number[] = [];
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 5; i++) heap.push({ readyAt: (round * 13 + i * 31) % 41, seq: seq++, key: '' });
      out.push(heap.pop()!.readyAt, heap.pop()!.readyAt);
      expect(heap.peek()!.readyAt).toBeGreaterThanOrEqual(out.at(-1)!);
    }
  });
});
