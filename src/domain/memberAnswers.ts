/**
 * A member cluster's answers to the engine's reading questions about one rollout (ClusterRoutedDriver: haltReason,
 * unavailableOutsideRollout), kept while the member's caches have not changed. Each pass of a rollout asked every
 * cluster again: over 1,000 members that was a third of the service's CPU in the clusters bench, for answers read from
 * caches of which only the few clusters with targets in motion had changed since the pass before.
 */

/** What an answer was read from: the member's driver (a new runtime is a new one) and its caches' change count. */
export interface AnswerStamp {
  readonly driver: object;
  readonly changes: number;
  /** What else of the rollout the answer depends on, e.g. its state. */
  readonly of?: string;
}

interface Kept<T> extends AnswerStamp {
  readonly value: T;
  readonly at: number;
}

export class MemberAnswers<T> {
  private readonly byRollout = new Map<string, Map<string, Kept<T>>>();

  /**
   * @param maxAgeMs how long an answer is kept even with nothing changed: an answer that also depends on the history
   *   (which no cache counts) is read again this often.
   * @param maxRollouts rollouts whose answers are kept (the oldest kept forgotten first); a rollout's go when it finishes.
   */
  constructor(
    private readonly maxAgeMs: number,
    private readonly maxRollouts: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The kept answer, when it was read from the same driver, caches and rollout, within maxAgeMs. */
  get(rolloutId: string, cluster: string, stamp: AnswerStamp): { value: T } | undefined {
    const kept = this.byRollout.get(rolloutId)?.get(cluster);
    if (!kept || kept.driver !== stamp.driver || kept.changes !== stamp.changes || kept.of !== stamp.of) return undefined;
    if (this.now() - kept.at >= this.maxAgeMs) return undefined;
    return { value: kept.value };
  }

  set(rolloutId: string, cluster: string, stamp: AnswerStamp, value: T): void {
    let answers = this.byRollout.get(rolloutId);
    if (!answers) {
      if (this.byRollout.size >= this.maxRollouts) this.byRollout.delete(this.byRollout.keys().next().value!);
      answers = new Map();
      this.byRollout.set(rolloutId, answers);
    }
    answers.set(cluster, { ...stamp, value, at: this.now() });
  }

  forget(rolloutId: string): void {
    this.byRollout.delete(rolloutId);
  }
}
