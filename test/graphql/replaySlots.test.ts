import { describe, expect, it } from 'vitest';
import { ReplaySlots } from '../../src/graphql/replaySlots.js';

/** A page read that stays open until the test lets it go, recording what ran at once. */
function pages() {
  const running = new Set<string>();
  let peak = 0;
  const releases = new Map<string, () => void>();
  return {
    running,
    peak: () => peak,
    page: (name: string) => () =>
      new Promise<string>((resolve) => {
        running.add(name);
        peak = Math.max(peak, running.size);
        releases.set(name, () => {
          running.delete(name);
          resolve(name);
        });
      }),
    finish: (name: string) => releases.get(name)!(),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ReplaySlots', () => {
  it('runs one page at a time per socket, in the order asked', async () => {
    const slots = new ReplaySlots(8);
    const p = pages();
    const socket = {};
    const done = [slots.run(socket, p.page('a')), slots.run(socket, p.page('b')), slots.run(socket, p.page('c'))];
    await settle();
    expect([...p.running]).toEqual(['a']);
    p.finish('a');
    await settle();
    expect([...p.running]).toEqual(['b']);
    p.finish('b');
    await settle();
    p.finish('c');
    expect(await Promise.all(done)).toEqual(['a', 'b', 'c']);
    expect(p.peak()).toBe(1);
  });

  it('bounds the pages in flight over all sockets, and lets other sockets go meanwhile', async () => {
    const slots = new ReplaySlots(2);
    const p = pages();
    const done = ['x', 'y', 'z'].map((name) => slots.run({}, p.page(name)));
    await settle();
    expect([...p.running]).toEqual(['x', 'y']);
    p.finish('y');
    await settle();
    expect([...p.running].sort()).toEqual(['x', 'z']);
    p.finish('x');
    p.finish('z');
    await Promise.all(done);
    expect(p.peak()).toBe(2);
  });

  it('frees the slot and the socket when a page fails', async () => {
    const slots = new ReplaySlots(1);
    const socket = {};
    await expect(slots.run(socket, () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    expect(await slots.run(socket, async () => 'next')).toBe('next');
    expect(await slots.run({}, async () => 'other')).toBe('other');
  });

  it('refuses a concurrency that is not a positive integer', () => {
    expect(() => new ReplaySlots(0)).toThrow(RangeError);
    expect(() => new ReplaySlots(1.5)).toThrow(RangeError);
  });
});
