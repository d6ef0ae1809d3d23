/**
 * How long each simulated step takes. Every delay is configurable; `zeroDelays` makes the simulated cluster converge
 * as fast as the event loop allows (benchmarks, most tests), `defaultDelays` looks alive in a demo (a new pod is
 * Ready after about 1.5 s).
 */
export interface SimDelays {
  /** Unscheduled pod → bound to a node (PodScheduled=True). */
  podScheduleMs: number;
  /** Scheduled pod → containers started (phase Running). Also how long an image pull takes to fail. */
  podStartMs: number;
  /** Running → Ready (ContainersReady/Ready=True, readiness gates permitting). Also a restart's way back to Ready. */
  podReadyMs: number;
  /** A pod with deletionTimestamp on a Ready node is removed this long after the deletion was observed. */
  podTerminateMs: number;
  /** Time a workload controller waits before acting on a change (models controller-manager latency). */
  controllerMs: number;
}

export const defaultDelays: Readonly<SimDelays> = Object.freeze({
  podScheduleMs: 100,
  podStartMs: 700,
  podReadyMs: 700,
  podTerminateMs: 200,
  controllerMs: 20,
});

export const zeroDelays: Readonly<SimDelays> = Object.freeze({
  podScheduleMs: 0,
  podStartMs: 0,
  podReadyMs: 0,
  podTerminateMs: 0,
  controllerMs: 0,
});

export function resolveDelays(delays: Partial<SimDelays> | undefined): SimDelays {
  return { ...defaultDelays, ...delays };
}
