import type { PlannedWave, WavePlan } from './plan.js';

/**
 * The next step of a staged run (issue 30), decided from what is true now: the frozen plan, each cluster's outcome
 * as the engine recorded it (after observing the change it wrote, never a status read before it), each gate's state
 * as computed from its kept decisions or attempts, the clusters' maintenance windows and the clock. Nothing is
 * remembered between calls, so a new leader after a crash decides the same step from the same history: a finished
 * cluster is never started again, a gate is never skipped, a soak is measured from the recorded finish.
 *
 * Order inside the run: wave by wave; in a wave: its `before` gate, its clusters (at most `maxConcurrency` at once,
 * each admitted only inside its window), then — once all ended within `maxFailures` — its soak (`minSuccessTime`
 * from the last success) and its `after` gate; then the next wave. A wave failure (more failures than tolerated, any
 * failure in a mandatory wave, or a failed gate) ends in the run's failure policy.
 */
export type ClusterOutcome = 'PENDING' | 'ACTIVE' | 'SUCCEEDED' | 'FAILED' | 'SKIPPED';

export interface ClusterProgress {
  outcome: ClusterOutcome;
  /** When it ended (SUCCEEDED, FAILED, SKIPPED). */
  endedAt?: Date | null;
  /** ACTIVE with targets not admitted yet. */
  pendingTargets?: boolean;
}

/** A gate's state as its own rules computed it (approval.ts, externalCheck.ts, a timed wait). */
export interface GateProgress {
  state: 'PASSED' | 'WAITING' | 'FAILED';
  reason: string;
  /** When a WAITING gate should be looked at again without anything else happening (a check's next attempt). */
  until?: Date | null;
  /**
   * A WAITING that only a person ends (an analysis Inconclusive, or in Error past its limit: issue 33): the run pauses
   * with the reason — not a failure, so the failure policy does not apply — until someone retries the gate, or resumes
   * the run to accept it.
   */
  holds?: boolean;
}

export type FailurePolicy = 'PAUSE' | 'ROLLBACK_COMPLETED' | 'CONTINUE';

export interface RunFacts {
  plan: WavePlan;
  /** Every planned cluster's progress; a cluster missing here is PENDING. */
  clusters: ReadonlyMap<string, ClusterProgress>;
  /** The run's gates by position (`gateKey`); a gate the run has that is missing here has not opened yet. */
  gates: ReadonlyMap<string, GateProgress>;
  /** Positions that have a gate (`before:<wave>`, `after:<wave>`). */
  gatePositions: ReadonlySet<string>;
  /** Whether the cluster may be admitted now (maintenance windows), why not, and until when that holds. */
  window(cluster: string): { open: boolean; reason: string; until: Date | null };
  failurePolicy: FailurePolicy;
  now: Date;
}

export type RunStep =
  | { do: 'admit'; wave: string; clusters: string[] }
  | { do: 'open-gate'; gate: string }
  /** `heldByWindows`: the wave's pending clusters, when maintenance windows are what holds them all. */
  | { do: 'wait'; wave: string; reason: string; until: Date | null; heldByWindows?: string[] }
  | { do: 'succeed'; toleratedFailures: string[]; skipped: string[] }
  /** `held`: a gate holds the run (GateProgress.holds), no wave failed. */
  | { do: 'pause'; wave: string; reason: string; held?: boolean }
  | { do: 'roll-back'; wave: string; reason: string; clusters: string[] }
  | { do: 'fail'; wave: string | null; reason: string };

export function gateKey(position: 'before' | 'after', wave: string): string {
  return `${position}:${wave}`;
}

export function nextStep(facts: RunFacts): RunStep {
  const tolerated: string[] = [];
  const failedWaves: string[] = [];
  for (const [index, wave] of facts.plan.waves.entries()) {
    const step = waveStep(facts, wave);
    if (step.do === 'done') {
      tolerated.push(...step.failed);
      continue;
    }
    if (step.do !== 'failed') return step;
    const reason = `wave ${wave.name} failed: ${step.reason}`;
    switch (facts.failurePolicy) {
      case 'CONTINUE':
        failedWaves.push(wave.name);
        tolerated.push(...step.failed);
        continue;
      case 'ROLLBACK_COMPLETED':
        return { do: 'roll-back', wave: wave.name, reason, clusters: changedSoFar(facts, facts.plan.waves.slice(0, index + 1)) };
      default:
        return { do: 'pause', wave: wave.name, reason };
    }
  }
  const skipped = facts.plan.waves.flatMap((w) => w.clusters.filter((c) => outcomeOf(facts, c) === 'SKIPPED'));
  if (failedWaves.length > 0) {
    return { do: 'fail', wave: null, reason: `every wave ran (policy CONTINUE); failed: ${failedWaves.join(', ')}; failed clusters: ${tolerated.join(', ')}` };
  }
  return { do: 'succeed', toleratedFailures: tolerated, skipped };
}

type WaveStep = RunStep | { do: 'done'; failed: string[] } | { do: 'failed'; reason: string; failed: string[] };

function waveStep(facts: RunFacts, wave: PlannedWave): WaveStep {
  const before = gateStep(facts, gateKey('before', wave.name), wave);
  if (before) return before;
  // One look at each cluster (a pass asks this of every wave up to the current one: at 1,000 clusters, bench waves).
  const failed: string[] = [];
  const active: string[] = [];
  const pending: string[] = [];
  let lastEnd = 0;
  for (const c of wave.clusters) {
    const progress = facts.clusters.get(c);
    const outcome = progress?.outcome ?? 'PENDING';
    if (outcome === 'FAILED') failed.push(c);
    else if (outcome === 'ACTIVE') active.push(c);
    else if (outcome === 'PENDING') pending.push(c);
    lastEnd = Math.max(lastEnd, progress?.endedAt?.getTime() ?? 0);
  }
  if (failed.length > 0 && (wave.mandatory || failed.length > wave.maxFailures)) {
    const limit = wave.mandatory ? 'a mandatory wave tolerates none' : `it tolerates ${wave.maxFailures}`;
    return { do: 'failed', reason: `${failed.length} cluster${failed.length === 1 ? '' : 's'} failed (${failed.join(', ')}); ${limit}`, failed };
  }
  if (pending.length > 0) {
    const slots = wave.maxConcurrency - active.length;
    if (slots > 0) {
      const startable = pending.filter((c) => facts.window(c).open).slice(0, slots);
      if (startable.length > 0) return { do: 'admit', wave: wave.name, clusters: startable };
      if (active.length === 0) return closedWindows(facts, wave, pending);
    }
  }
  if (active.length > 0) {
    return {
      do: 'wait',
      wave: wave.name,
      reason: `wave ${wave.name}: ${active.length} cluster${active.length === 1 ? '' : 's'} in progress (${active.slice(0, 5).join(', ')}${active.length > 5 ? ', …' : ''})`,
      until: null,
    };
  }
  // Every cluster ended, within the tolerance: soak, then the `after` gate.
  const soakEnds = lastEnd + wave.minSuccessMs;
  if (wave.minSuccessMs > 0 && wave.clusters.length > 0 && facts.now.getTime() < soakEnds) {
    return { do: 'wait', wave: wave.name, reason: `wave ${wave.name} succeeded; soaking until ${new Date(soakEnds).toISOString()}`, until: new Date(soakEnds) };
  }
  const after = gateStep(facts, gateKey('after', wave.name), wave);
  return after ?? { do: 'done', failed };
}

/** The gate's step while it has not passed; undefined once passed (or when the run has no gate there). */
function gateStep(facts: RunFacts, key: string, wave: PlannedWave): WaveStep | undefined {
  if (!facts.gatePositions.has(key)) return undefined;
  const gate = facts.gates.get(key);
  if (!gate) return { do: 'open-gate', gate: key };
  if (gate.state === 'PASSED') return undefined;
  if (gate.state === 'FAILED') return { do: 'failed', reason: `gate ${key}: ${gate.reason}`, failed: [] };
  if (gate.holds) return { do: 'pause', wave: wave.name, reason: `gate ${key}: ${gate.reason}`, held: true };
  return { do: 'wait', wave: wave.name, reason: `gate ${key}: ${gate.reason}`, until: gate.until ?? null };
}

/** No cluster of the wave may start now: wait for the earliest window among them, saying which policy keeps each. */
function closedWindows(facts: RunFacts, wave: PlannedWave, pending: readonly string[]): RunStep {
  const windows = pending.map((c) => ({ cluster: c, ...facts.window(c) }));
  const opening = windows.map((w) => w.until?.getTime()).filter((t): t is number => t !== undefined);
  const first = windows[0]!;
  return {
    do: 'wait',
    wave: wave.name,
    reason: `wave ${wave.name}: no cluster may start now (${first.cluster}: ${first.reason}${windows.length > 1 ? `; and ${windows.length - 1} more` : ''})`,
    until: opening.length > 0 ? new Date(Math.min(...opening)) : null,
    heldByWindows: [...pending],
  };
}

/** The clusters already changed (or in flight) in these waves, last wave first, each wave in reverse order. */
function changedSoFar(facts: RunFacts, waves: readonly PlannedWave[]): string[] {
  return [...waves].reverse().flatMap((w) => [...w.clusters].reverse().filter((c) => ['SUCCEEDED', 'ACTIVE', 'FAILED'].includes(outcomeOf(facts, c))));
}

function outcomeOf(facts: RunFacts, cluster: string): ClusterOutcome {
  return facts.clusters.get(cluster)?.outcome ?? 'PENDING';
}
