import { describe, expect, it } from 'vitest';
import { MemberChangeFeed } from '../../src/clusters/memberChangeFeed.js';

describe('MemberChangeFeed', () => {
  it('says which members changed since a look, every member for a first look or one older than it keeps', () => {
    const feed = new MemberChangeFeed(4);
    const first = feed.changedSince(undefined);
    expect(first.clusters).toBeUndefined();
    feed.note('m1');
    feed.note('m2');
    feed.note('m1');
    const second = feed.changedSince(first.seq);
    expect([...second.clusters!].sort()).toEqual(['m1', 'm2']);
    expect(feed.changedSince(second.seq).clusters).toEqual(new Set());
    // A member changing again after a look that saw it change is seen again.
    feed.note('m1');
    expect(feed.changedSince(second.seq).clusters).toEqual(new Set(['m1']));
    // Past `keep` entries the oldest half goes: a look from before it sees everything.
    for (const m of ['m3', 'm4', 'm5']) feed.note(m);
    expect(feed.changedSince(first.seq).clusters).toBeUndefined();
    const now = feed.changedSince(undefined).seq;
    feed.note('m6');
    expect(feed.changedSince(now).clusters).toEqual(new Set(['m6']));
  });
});
