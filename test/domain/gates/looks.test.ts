import { describe, expect, it } from 'vitest';
import { GateLooks, nextAttemptAt } from '../../../src/domain/gates/looks.js';
import type { GateAttempt, GateRef } from '../../../src/domain/gates/registry.js';
import type { GateAttemptRow } from '../../../src/domain/historyPort.js';

/**
 * A gate's attempts in the background (ADR 0068): started only when due and once per process, bounded by a timeout
 * (a hang is a FAILURE answer with its reason), kept, then the rollout woken; nothing kept once this process let go.
 */
const gate: GateRef = {
  id: 'r:before:w',
  rolloutId: 'r',
  key: 'before:w',
  wave: { name: 'w', ordinal: 0, clusters: ['c'] },
  version: 'v2',
  baselineVersion: null,
};

function looks(now = 1_000_000, latest = true) {
  const kept: GateAttemptRow[] = [];
  const extended: { seq: number; at: Date }[] = [];
  const woken: string[] = [];
  let settle: () => void = () => {};
  const recorded = () => new Promise<void>((resolve) => (settle = resolve));
  const subject = new GateLooks({
    record: async (row) => {
      kept.push(row);
      settle();
      return true;
    },
    extend: async (_gateId, seq, at) => {
      if (latest) extended.push({ seq, at });
      settle();
      return latest;
    },
    wake: (id) => woken.push(id),
    now: () => now,
  });
  return { subject, kept, extended, woken, recorded };
}

describe('gate looks', () => {
  it('keeps one row per change of answer when told the latest attempt: the same answer moves its `at` on', async () => {
    const latest: GateAttempt = { seq: 3, startedAt: new Date(1), at: new Date(2), answer: 'WAIT', afterMs: 5000, reason: 'alerts firing: A' };
    const same = async () => ({ answer: 'WAIT' as const, afterMs: 5000, reason: 'alerts firing: A' });
    const { subject, kept, extended, woken, recorded } = looks();
    let done = recorded();
    subject.start(gate, 4, new Date(1_000_000), 1000, same, { repeatOf: latest });
    await done;
    expect(extended).toEqual([{ seq: 3, at: new Date(1_000_000) }]);
    expect(kept).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve)); // the look is no longer under way here
    // Another answer is a new row, numbered next.
    done = recorded();
    subject.start(gate, 4, new Date(1_000_000), 1000, async () => ({ answer: 'WAIT' as const, afterMs: 5000, reason: 'alerts firing: A, B' }), {
      repeatOf: latest,
    });
    await done;
    expect(kept.map((k) => `${k.seq}:${k.reason}`)).toEqual(['4:alerts firing: A, B']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual(['r', 'r']);

    // The same answer, but the attempt is no longer the latest (another process added one): recorded as new.
    const behind = looks(1_000_000, false);
    done = behind.recorded();
    behind.subject.start(gate, 4, new Date(1_000_000), 1000, same, { repeatOf: latest });
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(behind.kept.map((k) => k.seq)).toEqual([4]);
  });

  it('asks once when due, keeps the answer and wakes the rollout; not before it is due', async () => {
    const { subject, kept, woken, recorded } = looks();
    let asked = 0;
    const ask = async () => {
      asked++;
      return { answer: 'WAIT' as const, afterMs: 5000, reason: 'alerts firing: A' };
    };
    subject.start(gate, 0, new Date(1_000_001), 1000, ask);
    expect(subject.pending()).toEqual([]);
    const done = recorded();
    subject.start(gate, 0, new Date(1_000_000), 1000, ask);
    subject.start(gate, 0, new Date(1_000_000), 1000, ask);
    await done;
    expect(asked).toBe(1);
    expect(kept).toEqual([
      { gateId: gate.id, seq: 0, startedAt: new Date(1_000_000), at: new Date(1_000_000), answer: 'WAIT', afterMs: 5000, reason: 'alerts firing: A' },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual(['r']);
  });

  it('turns a hang into a FAILURE after its timeout, and a throw into a FAILURE with its message', async () => {
    const { subject, kept, recorded } = looks();
    let done = recorded();
    subject.start(gate, 0, new Date(0), 50, (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
    await done;
    expect(kept[0]).toMatchObject({ answer: 'FAILURE', reason: 'no answer within 50 ms' });
    done = recorded();
    subject.start(gate, 1, new Date(0), 1000, async () => {
      throw new Error('socket hang up');
    });
    await done;
    expect(kept[1]).toMatchObject({ seq: 1, answer: 'FAILURE', reason: 'socket hang up' });
  });

  it('keeps nothing once stopped (stepping down), and starts nothing until resumed', async () => {
    const { subject, kept, recorded } = looks();
    /** Lets every settled promise run its continuations (the answers above are already given). */
    const flush = async () => {
      for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    let answer: (value: { answer: 'PROCEED'; afterMs: null; reason: string }) => void = () => {};
    subject.start(gate, 0, new Date(0), 1000, () => new Promise((resolve) => (answer = resolve)));
    subject.stop();
    answer({ answer: 'PROCEED', afterMs: null, reason: 'late' });
    subject.start(gate, 0, new Date(0), 1000, async () => ({ answer: 'PROCEED', afterMs: null, reason: 'while stopped' }));
    await flush();
    expect(kept).toEqual([]);
    subject.resume();
    const done = recorded();
    subject.start(gate, 0, new Date(0), 1000, async () => ({ answer: 'PROCEED', afterMs: null, reason: 'leading again' }));
    await done;
    expect(kept.map((k) => k.reason)).toEqual(['leading again']);
  });

  it('computes when the next attempt is due from the kept ones', () => {
    const at = (s: number) => new Date(s * 1000);
    const attempt = (answer: GateAttempt['answer'], s: number, afterMs: number | null = null): GateAttempt => ({
      seq: 0,
      startedAt: at(s),
      at: at(s),
      answer,
      afterMs,
      reason: '',
    });
    expect(nextAttemptAt(at(10), [], 60_000)).toEqual(at(10));
    expect(nextAttemptAt(at(10), [attempt('WAIT', 20, 5000)], 60_000)).toEqual(at(25));
    expect(nextAttemptAt(at(10), [attempt('FAILURE', 20)], 60_000)).toEqual(at(80));
    expect(nextAttemptAt(at(10), [attempt('PROCEED', 20)], 60_000)).toBeNull();
  });
});
