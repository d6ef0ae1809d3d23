/**
 * The simulated cluster behind the simulator's API: a scheduler, a kubelet per node, Deployment/ReplicaSet/DaemonSet/
 * StatefulSet controllers, node crash/recovery (the store itself garbage-collects owned objects). Everything runs in-process off the store's
 * synchronous event stream and the injected Scheduler; every delay is configurable (`zeroDelays` for benchmarks).
 */
import type { ObjectStore } from '../types.js';
import { ClusterIndex } from './ClusterIndex.js';
import { type BehaviourContext, globToRegExp, resolveTypes } from './context.js';
import { ControllerRuntime } from './ControllerRuntime.js';
import { DaemonSetController } from './DaemonSetController.js';
import { resolveDelays, type SimDelays } from './delays.js';
import { DeploymentController } from './DeploymentController.js';
import { Kubelet } from './Kubelet.js';
import { NodeLifecycle, type NodeControl } from './NodeLifecycle.js';
import { PodScheduler } from './PodScheduler.js';
import { ReplicaSetController } from './ReplicaSetController.js';
import { RevisionStore } from './RevisionStore.js';
import { realScheduler, type Scheduler } from './scheduler.js';
import { StatefulSetController } from './StatefulSetController.js';
import { upstreamControllers, type UpstreamTiming } from './upstream/index.js';

export { defaultDelays, zeroDelays, type SimDelays } from './delays.js';
export { ManualScheduler } from './ManualScheduler.js';
export { realScheduler, type Scheduler } from './scheduler.js';
export type { NodeControl } from './NodeLifecycle.js';
export { NODE_AGENT_LABEL } from './context.js';

export interface BehaviourOptions {
  /** Overrides of the default delays (see defaultDelays / zeroDelays). */
  delays?: Partial<SimDelays>;
  /** Clock and timers; defaults to real time. */
  scheduler?: Scheduler;
  /** Image globs that fail to pull (ImagePullBackOff). Default `['*:bad*']`. */
  badImagePatterns?: string[];
  /** runtimeClassName of peer pods. Default `kata-remote`. */
  peerRuntimeClass?: string;
  /** Timing of the simulated upstream controllers (vm-dhcp-controller retry backoff, vc-manager poll period). */
  upstreamTiming?: UpstreamTiming;
  /** Called when a reconcile keeps failing (after retries). Default: ignore. */
  onError?: (controller: string, key: string, error: unknown) => void;
}

export interface Behaviour {
  readonly nodes: NodeControl;
  readonly delays: SimDelays;
  /** Resolves once no reconcile is queued or running (timed transitions may still be pending). */
  idle(): Promise<void>;
  stop(): void;
}

export function startBehaviour(store: ObjectStore, options: BehaviourOptions = {}): Behaviour {
  const index = new ClusterIndex();
  const types = resolveTypes(store);
  for (const type of Object.values(types)) {
    if (!type || !ClusterIndex.indexes(type.plural, type.group)) continue;
    for (const obj of store.list(type)) index.add(type.plural, obj);
  }
  const ctx: BehaviourContext = {
    store,
    index,
    scheduler: options.scheduler ?? realScheduler,
    delays: resolveDelays(options.delays),
    types,
    badImages: (options.badImagePatterns ?? ['*:bad*']).map(globToRegExp),
    peerRuntimeClass: options.peerRuntimeClass ?? 'kata-remote',
  };
  const revisions = new RevisionStore(ctx);
  const runtime = new ControllerRuntime(
    [
      new PodScheduler(ctx),
      new Kubelet(ctx),
      new ReplicaSetController(ctx),
      new DeploymentController(ctx),
      new DaemonSetController(ctx, revisions),
      new StatefulSetController(ctx, revisions),
      // Idle unless their Deployments are installed (fleet option `upstream=...`).
      ...upstreamControllers(ctx, options.upstreamTiming),
    ],
    { scheduler: ctx.scheduler, onError: options.onError ?? (() => undefined) },
  );
  const unsubscribe = store.subscribe((event) => {
    index.apply(event);
    runtime.onEvent(event);
  });
  runtime.start();
  return {
    nodes: new NodeLifecycle(ctx),
    delays: ctx.delays,
    idle: () => runtime.idle(),
    stop() {
      unsubscribe();
      runtime.stop();
    },
  };
}
