import type { UnreachablePolicy } from './strategy.js';

/** How soon a staged run waiting for an UNREACHABLE cluster (unreachable: WAIT) looks again. */
export const UNREACHABLE_RECHECK_MS = 5_000;

/** WAIT's bound: how long the run waits for a cluster it reached while UNREACHABLE, and what it does after that. */
export interface UnreachableWait {
  readonly seconds: number;
  readonly fallback: 'SKIP' | 'FAIL';
}

/** What the run does now with a cluster it is about to start (issue 30, docs/waves.md "How a run goes"). */
export type UnreachableVerdict =
  | { do: 'start' }
  /** Not started: looked at again at `until` (the recheck, or the end of WAIT's bound, whichever is first). */
  | { do: 'wait'; reason: string; until: Date }
  /** Its pending targets end now, with the reason, instead of being started. */
  | { do: 'end'; to: 'SKIPPED' | 'FAILED'; reason: string };

/**
 * The run's `unreachable` policy applied to one cluster, from the registry's health as read this pass and — for WAIT
 * with a bound — when the run first found that cluster unreachable (`since`, kept in the rollout's engine state so a
 * new leader counts from the same instant). Under WAIT without a bound the run waits as long as the cluster is down,
 * saying why; with `unreachableWaitSeconds`, once that long has passed since it was first found so, WAIT acts as the
 * chosen fallback (SKIP or FAIL) and the reason says it waited.
 */
export function unreachableVerdict(
  cluster: string,
  run: { unreachable: UnreachablePolicy; unreachableWait: UnreachableWait | null },
  unreachable: boolean,
  since: Date | undefined,
  now: Date,
): UnreachableVerdict {
  if (!unreachable) return { do: 'start' };
  const to = (policy: 'SKIP' | 'FAIL') => (policy === 'SKIP' ? ('SKIPPED' as const) : ('FAILED' as const));
  if (run.unreachable !== 'WAIT')
    return { do: 'end', to: to(run.unreachable), reason: `member cluster ${cluster} is UNREACHABLE (unreachable: ${run.unreachable})` };
  const bound = run.unreachableWait;
  const recheck = now.getTime() + UNREACHABLE_RECHECK_MS;
  if (!bound) return { do: 'wait', reason: `member cluster ${cluster} is UNREACHABLE (unreachable: WAIT)`, until: new Date(recheck) };
  const expires = (since ?? now).getTime() + bound.seconds * 1000;
  if (now.getTime() >= expires) {
    return {
      do: 'end',
      to: to(bound.fallback),
      reason: `member cluster ${cluster} is UNREACHABLE: waited ${bound.seconds}s since ${(since ?? now).toISOString()} (unreachable: WAIT, then ${bound.fallback})`,
    };
  }
  return {
    do: 'wait',
    reason: `member cluster ${cluster} is UNREACHABLE (unreachable: WAIT until ${new Date(expires).toISOString()}, then ${bound.fallback})`,
    until: new Date(Math.min(recheck, expires)),
  };
}

/**
 * The `window` a staged pass asks `nextStep` with (RunFacts.window): a cluster the run waits for as UNREACHABLE is not
 * open, with the reason and the next look; any other answers its maintenance windows. The engine and
 * `Rollout.waitingFor` both use it, so the API says what the engine does. `waitedFor` collects the clusters asked
 * about that the run waits for (the engine records when it first found each so).
 */
export function stagedAdmission(
  run: { unreachable: UnreachablePolicy; unreachableWait: UnreachableWait | null },
  health: ReadonlyMap<string, string>,
  since: Readonly<Record<string, string>>,
  now: Date,
  maintenance: (cluster: string) => { open: boolean; reason: string; until: Date | null },
) {
  const verdict = (cluster: string) =>
    unreachableVerdict(cluster, run, health.get(cluster) === 'UNREACHABLE', since[cluster] ? new Date(since[cluster]) : undefined, now);
  const waitedFor = new Set<string>();
  const window = (cluster: string) => {
    const v = verdict(cluster);
    if (v.do !== 'wait') return maintenance(cluster);
    waitedFor.add(cluster);
    return { open: false, reason: v.reason, until: v.until };
  };
  return { verdict, window, waitedFor };
}
