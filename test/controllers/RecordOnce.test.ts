import { describe, expect, it } from 'vitest';
import type { InFlightChanges, InFlightNotes } from '../../src/domain/InFlightChanges.js';
import type { NewEvent } from '../../src/domain/events.js';
import { RecordOnce } from '../../src/controllers/RecordOnce.js';

/** InFlightChanges in memory: what RecordOnce uses of it (notes per kind), with the commits it was asked for. */
function memoryNotes() {
  const notes = new Map<string, object>();
  const committed: { key: string; events: readonly NewEvent[] }[] = [];
  const inFlight = {
    of: <T extends object>(): InFlightNotes<T> => ({
      get: (ns, name) => notes.get(`${ns}/${name}`) as T | undefined,
      put: async (ns, name, note) => {
        notes.set(`${ns}/${name}`, note);
      },
      complete: async (ns, name, events) => {
        notes.delete(`${ns}/${name}`);
        committed.push({ key: `${ns}/${name}`, events });
        return true;
      },
    }),
  } as unknown as InFlightChanges;
  return { inFlight, notes, committed };
}

const EVENT = {
  type: 'AgentRecreated',
  payload: {
    pool: 'default/net-1',
    oldImage: 'a',
    newImage: 'b',
    oldPodUid: 'u1',
    newPodUid: 'u2',
    reason: 'rollout',
    deletedAt: '2026-12-05T00:00:00.000Z',
    readyAt: '2026-12-05T00:00:01.000Z',
    seconds: 1,
  },
} as const;

describe('RecordOnce', () => {
  it('tells `settled` of a target once its intent is gone, after the commit (recorded or dropped), and never when nothing was in flight', async () => {
    const { inFlight, notes, committed } = memoryNotes();
    const settled: string[] = [];
    const once = new RecordOnce<{ plannedImage: string }>(inFlight, 'AGENT_POOL', (ns, name) => {
      // The driver's observation reads the intent: by now it must be gone, and its event committed.
      expect(notes.has(`${ns}/${name}`)).toBe(false);
      settled.push(`${ns}/${name}:${committed.length}`);
    });

    await once.intend('default', 'net-1', { rolloutId: 'r1', plannedImage: 'b' });
    await once.intend('default', 'net-2', { rolloutId: 'r1', plannedImage: 'b' });
    expect(settled).toEqual([]);

    // Two records of one target at once: one commit, one notice.
    const [a, b] = await Promise.all([once.record('default', 'net-1', () => EVENT as never), once.record('default', 'net-1', () => EVENT as never)]);
    expect([a, b]).toEqual([true, true]);
    expect(settled).toEqual(['default/net-1:1']);

    await once.drop('default', 'net-2');
    expect(settled).toEqual(['default/net-1:1', 'default/net-2:2']);

    // Nothing in flight any more: no commit, no notice.
    expect(await once.record('default', 'net-1', () => EVENT as never)).toBe(false);
    await once.drop('default', 'net-2');
    expect(settled).toHaveLength(2);
    expect(committed).toHaveLength(2);
  });
});
