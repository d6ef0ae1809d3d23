import type { GateAttemptRow } from '../historyPort.js';
import type { GateAttempt, GateRef } from './registry.js';

/**
 * The background side of gates that ask something outside (an external check's POST, an alert gate's question to
 * Prometheus; ADR 0068). An engine pass never waits on a network: the gate type's `open` asks `GateLooks` to start
 * the gate's next attempt once it is due; the attempt runs here, bounded by a timeout, and its answer is kept in SQL
 * (GateAttempt, numbered per gate: two leaders answering the same attempt keep one), then the rollout is woken and the
 * next pass computes the gate's progress from the kept attempts. The only thing in memory is which attempts this
 * process has under way, so that it never sends one twice itself; a leader that dies mid-attempt leaves no row, and the
 * next leader takes that attempt anew.
 */

/** What one attempt answered (kept as a GateAttempt row). */
export type LookAnswer = Pick<GateAttempt, 'answer' | 'afterMs' | 'reason'>;

export interface GateLooksDeps {
  /** Keeps the answer; false when its number was taken (another process answered first). */
  record(attempt: GateAttemptRow): Promise<boolean>;
  /**
   * Moves the gate's latest attempt's `at` on to a look that answered the same (`start`'s `repeatOf`); false when it
   * is no longer the latest (then the answer is recorded as a new attempt).
   */
  extend?(gateId: string, seq: number, at: Date): Promise<boolean>;
  /** The gate's rollout should be looked at again (its gate has a new answer). */
  wake(rolloutId: string): void;
  now?: () => number;
  logger?: { warn(details: object, message: string): void };
}

export class GateLooks {
  private readonly underWay = new Map<string, AbortController>();
  private closed = false;

  constructor(private readonly deps: GateLooksDeps) {}

  /**
   * Starts attempt `seq` of the gate unless it is under way here, or not due yet (`dueAt` after now: the gate's
   * progress says `until` then, and the engine looks again). `ask` gets a signal that aborts after `timeoutMs` (or
   * when this process stops); a throw or a timeout is a FAILURE answer with its reason. Returns at once.
   *
   * `repeatOf` (the gate's latest attempt, for a gate whose looks only repeat a state: the alert gate) keeps one row
   * per change of answer: a look that answers as it did moves its `at` on instead of adding a row (ADR 0071), so a gate
   * held for a day by the same alert keeps one row, not one per recheck.
   */
  start(
    gate: GateRef,
    seq: number,
    dueAt: Date,
    timeoutMs: number,
    ask: (signal: AbortSignal) => Promise<LookAnswer>,
    options: { repeatOf?: GateAttempt | undefined } = {},
  ): void {
    const key = `${gate.id}#${seq}`;
    const now = this.now();
    if (this.closed || this.underWay.has(key) || dueAt.getTime() > now) return;
    const controller = new AbortController();
    this.underWay.set(key, controller);
    const startedAt = new Date(now);
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(timeoutMs)]);
    void (async () => {
      let answer: LookAnswer;
      try {
        answer = await ask(signal);
      } catch (error) {
        answer = { answer: 'FAILURE', afterMs: null, reason: signal.aborted ? `no answer within ${timeoutMs} ms` : messageOf(error) };
      }
      if (controller.signal.aborted) return; // this process let go: the next leader asks anew
      const at = new Date(this.now());
      const reason = answer.reason.slice(0, 500);
      const last = options.repeatOf;
      const same = last && this.deps.extend && last.answer === answer.answer && last.afterMs === answer.afterMs && last.reason === reason;
      if (!same || !(await this.deps.extend!(gate.id, last.seq, at))) await this.deps.record({ gateId: gate.id, seq, startedAt, at, ...answer, reason });
      this.deps.wake(gate.rolloutId);
    })()
      .catch((error: unknown) => this.deps.logger?.warn({ err: error, gate: gate.id, seq }, 'a gate attempt could not be kept; the next pass asks again'))
      .finally(() => {
        if (this.underWay.get(key) === controller) this.underWay.delete(key);
      });
  }

  /** Attempts under way here (gate id#seq). */
  pending(): string[] {
    return [...this.underWay.keys()];
  }

  /** Lets go of every attempt under way, keeping nothing (stepping down, shutting down); `resume` starts again. */
  stop(): void {
    this.closed = true;
    for (const controller of this.underWay.values()) controller.abort();
    this.underWay.clear();
  }

  resume(): void {
    this.closed = false;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 200) : 'the attempt failed';
}

/** When a gate's next attempt is due from its kept attempts: at its opening, else when the last one said. */
export function nextAttemptAt(openedAt: Date, attempts: readonly GateAttempt[], retryMs: number): Date | null {
  const last = attempts.at(-1);
  if (!last) return openedAt;
  if (last.answer === 'PROCEED') return null;
  return new Date(last.at.getTime() + (last.answer === 'WAIT' ? (last.afterMs ?? retryMs) : retryMs));
}
