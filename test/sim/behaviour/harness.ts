/** A real MemoryStore with the simulated cluster behaviour running on it, plus helpers to observe every event. */
import { expect } from 'vitest';
import { startBehaviour, type Behaviour, type Scheduler, type SimDelays, zeroDelays } from '../../../src/sim/behaviour/index.js';
import { nodeObject } from '../../../src/sim/fleet.js';
import { MemoryStore } from '../../../src/sim/store/MemoryStore.js';
import { Resources } from '../../../src/sim/store/resources.js';
import type { KubeObject, StoreEvent } from '../../../src/sim/types.js';
import { until } from '../../helpers/until.js';

export interface Harness {
  store: MemoryStore;
  behaviour: Behaviour;
  errors: unknown[];
  /** Waits (real time, bounded) until `predicate` holds, letting the controllers run in between. */
  until(predicate: () => boolean, what: string): Promise<void>;
  /** Calls `check` on every store event from now on (it runs synchronously, so it sees every intermediate state). */
  onEvent(check: (event: StoreEvent) => void): () => void;
  stop(): void;
}

export function startHarness(
  options: { nodes?: number; delays?: Partial<SimDelays>; scheduler?: Scheduler; nodeLabels?: (i: number) => Record<string, string | undefined> } = {},
): Harness {
  const scheduler = options.scheduler;
  const store = new MemoryStore(scheduler ? { now: () => new Date(scheduler.now()) } : {});
  for (let i = 0; i < (options.nodes ?? 3); i++) store.create(Resources.nodes, nodeObject(`node-${i + 1}`, i, definedOnly(options.nodeLabels?.(i) ?? {})));
  const errors: unknown[] = [];
  const behaviour = startBehaviour(store, {
    delays: { ...zeroDelays, ...options.delays },
    ...(scheduler ? { scheduler } : {}),
    onError: (controller, key, error) => errors.push({ controller, key, error }),
  });
  const unsubscribers: (() => void)[] = [];
  return {
    store,
    behaviour,
    errors,
    async until(predicate, what) {
      // The simulated controllers settle before each look, so most waits end at the first one.
      await until(what, async () => (await behaviour.idle(), predicate()), { timeoutMs: 10_000, intervalMs: 2 });
    },
    onEvent(check) {
      const off = store.subscribe(check);
      unsubscribers.push(off);
      return off;
    },
    stop() {
      for (const off of unsubscribers) off();
      behaviour.stop();
      expect(errors).toEqual([]);
    },
  };
}

export function condition(obj: KubeObject | undefined, type: string): { status: string; lastTransitionTime?: string; reason?: string } | undefined {
  return obj?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

export function isReady(pod: KubeObject | undefined): boolean {
  return condition(pod, 'Ready')?.status === 'True';
}

/** Pods in `namespace` whose labels include `labels`. */
export function podsWith(store: MemoryStore, namespace: string, labels: Record<string, string>): KubeObject[] {
  return store.list(Resources.pods, namespace).filter((p) => Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v));
}

export function activePods(pods: KubeObject[]): KubeObject[] {
  return pods.filter((p) => !p.metadata.deletionTimestamp);
}

export function pod(name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { containers: [{ name: 'app', image: 'nginx:1.27' }], ...spec },
  };
}

export function template(labels: Record<string, string>, image: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { metadata: { labels }, spec: { containers: [{ name: 'app', image }], ...extra } };
}

/** Replaces the first container's image of a workload's pod template (an update, as `kubectl set image` does). */
export function setImage(store: MemoryStore, type: typeof Resources.deployments, namespace: string, name: string, image: string): KubeObject {
  const current = structuredClone(store.get(type, namespace, name)!);
  current.spec.template.spec.containers[0].image = image;
  return store.update(type, current);
}

export function patchSpec(store: MemoryStore, type: typeof Resources.deployments, namespace: string, name: string, change: (spec: any) => void): KubeObject {
  const current = structuredClone(store.get(type, namespace, name)!);
  change(current.spec);
  return store.update(type, current);
}

function definedOnly(labels: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
