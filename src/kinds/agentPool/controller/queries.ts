import type { V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../../controller/Informer.js';
import type { AgentPoolQueries, AgentPoolView } from '../plan.js';
import { agentsManagedBy } from './mode.js';
import { holdOf } from './names.js';
import { conditionTrue, podImage } from './podFacts.js';
import type { IPPool } from './types.js';
import type { VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

/** A view as built from one pool object, its agent pod object and the controller's image. */
interface BuiltView {
  pod: V1Pod | undefined;
  upstreamImage: string | undefined;
  view: AgentPoolView;
}

export interface AgentPoolQueriesDeps {
  pools: Informer<IPPool>;
  pods: CacheReader<V1Pod>;
  agentNamespace: string;
  controller: VmDhcpControllerWatch;
  /** The mode a rollout would run in now; throws the refusal when none. */
  rolloutMode: () => 'coexist' | 'direct';
  /** The driver's image admission and preflight (AgentPoolQueries.admitImage / preflight). */
  admitImage: (image: string) => string;
  preflight: (image: string, targets: readonly { namespace: string; name: string }[]) => Promise<void>;
}

/**
 * AgentPoolQueries over the informer caches: no API call per query. A view is built once per (pool object, pod object,
 * controller image): the informers replace an object on every change and never mutate one, so the same objects mean
 * the same view. Every agentPools page and drift request reads all pools, and rebuilding 200 views (conditions, dates)
 * per request was most of those requests' CPU (issue 17 profiles). Views handed out are shared: callers must not
 * mutate them.
 */
export function agentPoolQueries(deps: AgentPoolQueriesDeps): AgentPoolQueries {
  return new CachedAgentPoolQueries(deps);
}

class CachedAgentPoolQueries implements AgentPoolQueries {
  private readonly built = new WeakMap<IPPool, BuiltView>();
  private readonly pools: Informer<IPPool>;
  private readonly pods: CacheReader<V1Pod>;
  private readonly agentNamespace: string;
  private readonly controller: VmDhcpControllerWatch;
  private readonly rolloutMode: () => 'coexist' | 'direct';

  constructor(private readonly deps: AgentPoolQueriesDeps) {
    ({ pools: this.pools, pods: this.pods, agentNamespace: this.agentNamespace, controller: this.controller, rolloutMode: this.rolloutMode } = deps);
  }

  async admitImage(image: string): Promise<string> {
    return this.deps.admitImage(image);
  }

  async preflight(image: string, targets: readonly { namespace: string; name: string }[]): Promise<void> {
    await this.deps.preflight(image, targets);
  }

  async all(): Promise<AgentPoolView[]> {
    const upstreamImage = this.upstreamImage();
    return this.pools.list().map((pool) => this.view(pool, upstreamImage));
  }

  async get(namespace: string, name: string): Promise<AgentPoolView | undefined> {
    const pool = this.pools.get(namespace, name);
    return pool ? this.view(pool, this.upstreamImage()) : undefined;
  }

  async checkRollout(): Promise<'COEXIST' | 'DIRECT'> {
    return this.rolloutMode() === 'coexist' ? 'COEXIST' : 'DIRECT';
  }

  /** Beside a controller that deploys agents, every pool's desired image is the controller's: a held pool is behind. */
  private upstreamImage(): string | undefined {
    const state = this.controller.state();
    return state.kind === 'agents' && agentsManagedBy(state) === 'upstream' ? state.image : undefined;
  }

  private view(pool: IPPool, upstreamImage: string | undefined): AgentPoolView {
    const ref = pool.status?.agentPodRef;
    const pod = ref?.name ? this.pods.get(ref.namespace ?? this.agentNamespace, ref.name) : undefined;
    const built = this.built.get(pool);
    if (built && built.pod === pod && built.upstreamImage === upstreamImage) return built.view;
    const view = this.build(pool, pod, upstreamImage);
    this.built.set(pool, { pod, upstreamImage, view });
    return view;
  }

  private build(pool: IPPool, pod: V1Pod | undefined, upstreamImage: string | undefined): AgentPoolView {
    const namespace = pool.metadata!.namespace!;
    const name = pool.metadata!.name!;
    const status = pool.status ?? {};
    const ref = status.agentPodRef;
    const annotations = pool.metadata?.annotations ?? {};
    const hold = holdOf(annotations);
    const conditions = (status.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason ?? null,
      message: c.message ?? null,
      lastUpdateTime: c.lastUpdateTime ? new Date(c.lastUpdateTime) : null,
    }));
    return {
      namespace,
      name,
      labels: pool.metadata?.labels ?? {},
      networkName: pool.spec?.networkName ?? '',
      cidr: pool.spec?.ipv4Config?.cidr ?? null,
      paused: pool.spec?.paused === true,
      held: hold === 'other',
      heldByRollplane: hold === 'rollplane',
      mode: upstreamImage !== undefined ? 'COEXIST' : 'DIRECT',
      // A paused pool runs no agent, upstream or not: nothing is desired of it.
      desiredImage: pool.spec?.paused === true ? (ref?.image ?? null) : (upstreamImage ?? ref?.image ?? null),
      desiredBy: null,
      recordedImage: ref?.image ?? null,
      // A Terminating agent still runs (and serves) until it is gone.
      runningImage: (pod && podImage(pod)) || null,
      // Upstream recreates a missing agent with its own --image, held or not (DeployAgent's create path); rollplane, in
      // direct mode, with the recorded one. A paused pool gets none.
      recreatedWith: pool.spec?.paused === true ? null : (upstreamImage ?? ref?.image ?? null),
      exposedTo: null,
      agentRef: ref?.name ? `${ref.namespace ?? this.agentNamespace}/${ref.name}` : null,
      agentUid: ref?.uid ?? null,
      agentReady: conditionTrue(status.conditions, 'AgentReady'),
      conditions,
      driftSince: status.lastUpdate ? new Date(status.lastUpdate) : null,
    };
  }
}
