import type { ChildProcess } from 'node:child_process';
import type { Simulator } from '../../src/sim/index.js';
import { SimApiError } from '../../src/sim/store/errors.js';
import type { ApiRequestInfo, KubeObject, StoreEvent } from '../../src/sim/types.js';
import { killIfRunning, type ServiceProcess, startService } from './child.js';
import { gqlData } from './graphql.js';
import { until } from './until.js';

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

/** The image of a pod's (or pod template's) first container: what crash points of an image rollout look at. */
export const podImage = (pod: KubeObject | undefined) => pod?.spec?.containers?.[0]?.image as string | undefined;

/** Whether a pod's Ready condition is True. */
export const podReady = (pod: KubeObject | undefined) =>
  (pod?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

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

/** Generous: the bound only catches a service that never starts (a loaded machine starts it slowly). */
export const SERVICE_START_MS = 120_000;

/** The service process a test runs, replaced on each restart, so that the test's cleanup stops whichever runs. */
export interface ServiceSlot {
  service?: ServiceProcess;
}

/** A test's cleanup: SIGKILLs the slot's service unless it has exited, and empties the slot. */
export async function stopSlot(slot: ServiceSlot): Promise<void> {
  await killIfRunning(slot.service);
  slot.service = undefined;
}

const STATE = 'query ($id: ID!) { rollout(id: $id) { state message } }';

/**
 * Waits until rollout `id`, read through the service at `url`, has finished (SUCCEEDED or FAILED) and returns it as
 * `query` (variables `{ id }`, answering `rollout`) reads it.
 */
export function finishedRollout<T extends { state: string } = { state: string; message: string | null }>(
  url: string,
  id: string,
  query = STATE,
  timeoutMs = 90_000,
): Promise<T> {
  return until(
    'rollout finished',
    async () => {
      const rollout = (await gqlData(url, query, { id })).rollout as T;
      return ['SUCCEEDED', 'FAILED'].includes(rollout.state) ? rollout : undefined;
    },
    timeoutMs,
  );
}

export interface RestartAfterCrashOptions {
  sim: Simulator;
  point: CrashPoint;
  /** The environment the running service was started with; the restart uses it again. */
  env: Record<string, string>;
  /** Holds the running service; the restarted one takes its place. */
  slot: ServiceSlot;
  /** Starts the rollout that the crash interrupts, through the service at `url`, and returns its id. */
  startRollout(url: string): Promise<string>;
}

/**
 * The sequence every crash test shares: arms `point`, starts the rollout, waits until the point has SIGKILLed the
 * service (and checks that it died of that), starts the service again with the same environment and waits until the
 * rollout has finished. Returns the rollout's id, the restarted service's URL and the finished rollout; the test then
 * asserts what the restart must not have done twice.
 */
export async function restartAfterCrash(
  options: RestartAfterCrashOptions,
): Promise<{ id: string; url: string; rollout: { state: string; message: string | null } }> {
  const { sim, point, env, slot } = options;
  const running = slot.service;
  if (!running) throw new Error('restartAfterCrash: no service is running');
  const crash = armCrash(sim, point, () => slot.service?.child);
  let id: string;
  try {
    id = await options.startRollout(running.url);
    await until(`the crash point "${point.name}"`, () => crash.fired(), 120_000);
  } finally {
    crash.disarm();
  }
  const exit = await running.exited;
  if (exit.signal !== 'SIGKILL') throw new Error(`the service exited with ${exit.signal ?? exit.code}, not killed at "${point.name}"`);
  slot.service = await startService(env, SERVICE_START_MS);
  const url = slot.service.url;
  return { id, url, rollout: await finishedRollout(url, id) };
}
