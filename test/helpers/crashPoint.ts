import type { ChildProcess } from 'node:child_process';
import type { Simulator } from '../../src/sim/index.js';
import { SimApiError } from '../../src/sim/store/errors.js';
import type { ApiRequestInfo, StoreEvent } from '../../src/sim/types.js';

/**
 * A moment in a rollout step at which the service process is SIGKILLed, told apart by what reaches the simulator:
 * - `before`: a request about to be served — the service is killed and the request refused, so the write never lands
 *   (the service did everything up to that write, e.g. committed its intent);
 * - `after`: a write the store has just committed — the service is killed before it hears the answer (or, for a write
 *   of the simulator's own controllers, before its watch shows it).
 */
export interface CrashPoint {
  name: string;
  before?: (info: ApiRequestInfo) => boolean;
  after?: (event: StoreEvent) => boolean;
}

/**
 * Arms `point` once: the first request or store event it matches kills `victim()`; `fired()` tells whether it has. No sleeps:
 * the kill happens synchronously inside the simulator's handling, so the service cannot have gone on past that step.
 */
export function armCrash(sim: Simulator, point: CrashPoint, victim: () => ChildProcess | undefined): { fired(): boolean; disarm(): void } {
  let armed = true;
  let killed = false;
  const kill = () => {
    armed = false;
    killed = true;
    victim()?.kill('SIGKILL');
  };
  const previous = sim.api.hooks.beforeRequest;
  const unsubscribe = sim.store.subscribe((event) => {
    if (armed && point.after?.(event)) kill();
  });
  sim.api.hooks.beforeRequest = async (info) => {
    await previous?.(info);
    if (armed && point.before?.(info)) {
      kill();
      throw new SimApiError(503, 'ServiceUnavailable', `crash point ${point.name}: the service was killed before this request`);
    }
  };
  return {
    fired: () => killed,
    disarm() {
      armed = false;
      unsubscribe();
      sim.api.hooks.beforeRequest = previous;
    },
  };
}
