import { clusterOf, targetKey } from './ports.js';
import type { RolloutTarget } from './RolloutService.js';
import type { TargetState } from './rolloutStates.js';
import { type ClusterTally, countTarget, outcomeOf, tallyIn } from './waves/engineStage.js';
import type { ClusterProgress } from './waves/progress.js';

/** How `nextPending` chooses among the PENDING targets, beyond plan order. */
export interface PendingChoice {
  /** Targets admitted only after every other pending one (a member nobody drives now). */
  deferred?: (target: RolloutTarget) => boolean;
  /** Deferred targets are taken only while fewer than this many targets were chosen in all (default: the limit). */
  deferredLimit?: number;
  /** Takes a slot for the target, or says there is none (a per-cluster limit); asked once per target chosen. */
  take?: (target: RolloutTarget) => boolean;
}

/**
 * The engine's picture of one rollout's targets between passes: every target in admission order, counts per state,
 * and where the next PENDING target is. Loaded once from the store and then kept current with the engine's own
 * writes, so that a pass over a 10,000-target rollout reads no rows and scans only what it has to. Anything that
 * changes targets behind the engine's back (an abort cancelling PENDING targets, another leader) makes it reload:
 * the engine drops the view when the rollout's state is not the one it last saw, and on every leadership change.
 */
export class RolloutView {
  readonly targets: RolloutTarget[];
  private readonly indexById = new Map<string, number>();
  private readonly counts = new Map<TargetState, number>();
  /** Targets before this index are not PENDING (nothing becomes PENDING again). */
  private pendingFrom = 0;
  /**
   * Keys of the targets the rollout changes (not SKIPPED: a skipped target never changes state). A pool it skips (held,
   * already current) that is down is down outside the rollout and counts against maxUnavailable.
   */
  readonly changingKeys: ReadonlySet<string>;
  /** Keys of targets whose object changed since they were last observed (the driver's notifications). */
  private readonly changed = new Set<string>();
  /** Per cluster: its targets not SKIPPED and those PROGRESSING, kept with every update (read on each admission pass). */
  private readonly perCluster = new Map<string, { changing: number; progressing: number }>();
  /** Per cluster: its targets counted by outcome, and the outcome they give (a staged pass reads it: ADR 0072). */
  private readonly tallies = new Map<string, ClusterTally>();
  private readonly outcomes = new Map<string, ClusterProgress>();
  /** When every PROGRESSING target was last observed (0: never). */
  lastFullObservation = 0;
  /** The earliest progress deadline of a PROGRESSING target, as of the last full observation and later admissions. */
  earliestDeadline = Infinity;

  constructor(
    targets: RolloutTarget[],
    /** The rollout state this view was loaded (or last confirmed) under. */
    public seenState: string,
  ) {
    this.targets = targets;
    targets.forEach((t, i) => {
      this.indexById.set(t.id, i);
      this.counts.set(t.state, (this.counts.get(t.state) ?? 0) + 1);
      this.countInCluster(t, 1);
      this.tally(t, 1);
    });
    for (const [cluster, tally] of this.tallies) this.outcomes.set(cluster, outcomeOf(tally));
    this.changingKeys = new Set(targets.filter((t) => t.state !== 'SKIPPED').map((t) => targetKey(t)));
  }

  /** A target's place by its key (built when first asked: only passes that observe part of the targets need it). */
  private indexByKey: Map<string, number> | undefined;

  count(state: TargetState): number {
    return this.counts.get(state) ?? 0;
  }

  /** Targets not skipped: what the rollout changes. */
  changing(): number {
    return this.targets.length - this.count('SKIPPED');
  }

  /** Targets that were admitted at some point (canary counting). */
  admittedSoFar(): number {
    return this.targets.length - this.count('PENDING') - this.count('SKIPPED') - this.count('CANCELLED');
  }

  inState(state: TargetState): RolloutTarget[] {
    return this.targets.filter((t) => t.state === state);
  }

  firstInState(state: TargetState): RolloutTarget | undefined {
    return this.targets.find((t) => t.state === state);
  }

  /** Up to `limit` PENDING targets in admission order. */
  nextPending(limit: number, options: PendingChoice = {}): RolloutTarget[] {
    const { deferred, take } = options;
    const deferredLimit = Math.min(limit, options.deferredLimit ?? limit);
    const out: RolloutTarget[] = [];
    const later: RolloutTarget[] = [];
    let sawPending = false;
    for (let i = this.pendingFrom; i < this.targets.length && out.length < limit; i++) {
      const target = this.targets[i]!;
      if (target.state !== 'PENDING') {
        if (!sawPending) this.pendingFrom = i + 1;
        continue;
      }
      sawPending = true;
      if (deferred?.(target)) later.push(target);
      else if (!take || take(target)) out.push(target);
    }
    // Deferred targets only once no other is pending: they fill what is left of the limit.
    for (const target of later) {
      if (out.length >= deferredLimit) break;
      if (!take || take(target)) out.push(target);
    }
    return out;
  }

  /** Per cluster: its targets that change (not skipped) and those in flight now (kept current; read it, never keep it). */
  byCluster(): ReadonlyMap<string, Readonly<{ changing: number; progressing: number }>> {
    return this.perCluster;
  }

  /**
   * Each cluster's outcome from its targets' recorded states (waves/engineStage.ts outcomeOf), kept current with every
   * update: what a staged pass decides from without going over the rollout's targets. Read it, never keep it.
   */
  clusterOutcomes(): ReadonlyMap<string, ClusterProgress> {
    return this.outcomes;
  }

  private tally(target: RolloutTarget, by: 1 | -1): ClusterTally {
    const tally = tallyIn(this.tallies, clusterOf(target));
    countTarget(tally, target, by);
    return tally;
  }

  private countInCluster(target: RolloutTarget, by: 1 | -1): void {
    if (target.state === 'SKIPPED') return;
    const cluster = clusterOf(target);
    const entry = this.perCluster.get(cluster) ?? { changing: 0, progressing: 0 };
    entry.changing += by;
    if (target.state === 'PROGRESSING') entry.progressing += by;
    this.perCluster.set(cluster, entry);
  }

  /** A target's object changed in the cluster: observe it on the next pass. */
  markChanged(key: string): void {
    this.changed.add(key);
  }

  /**
   * The PROGRESSING targets a pass observes: all of them when `all`, else those that changed since their last
   * observation. Either way the changed set starts afresh.
   */
  toObserve(all: boolean): RolloutTarget[] {
    if (all) {
      this.changed.clear();
      return this.inState('PROGRESSING');
    }
    // Only the changed ones, found by key rather than by going over every target; in admission order, as `all` gives.
    if (!this.indexByKey) this.indexByKey = new Map(this.targets.map((t, i) => [targetKey(t), i]));
    const picked: number[] = [];
    for (const key of this.changed) {
      const index = this.indexByKey.get(key);
      if (index !== undefined && this.targets[index]!.state === 'PROGRESSING') picked.push(index);
    }
    this.changed.clear();
    return picked.sort((a, b) => a - b).map((i) => this.targets[i]!);
  }

  /** Replaces a target with its stored new state. */
  update(target: RolloutTarget): void {
    const index = this.indexById.get(target.id);
    if (index === undefined) return;
    const old = this.targets[index]!;
    this.counts.set(old.state, (this.counts.get(old.state) ?? 1) - 1);
    this.counts.set(target.state, (this.counts.get(target.state) ?? 0) + 1);
    this.countInCluster(old, -1);
    this.countInCluster(target, 1);
    this.tally(old, -1);
    this.outcomes.set(clusterOf(target), outcomeOf(this.tally(target, 1)));
    this.targets[index] = target;
  }
}
