import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../controller/Informer.js';
import type { AgentPoolQueries, AgentPoolView } from '../../domain/agentPools.js';
import { agentName, ANNOTATION_HOLD } from './names.js';
import { conditionTrue, deploymentImage, podImage } from './podState.js';
import type { AgentMode, IPPool } from './types.js';

/** AgentPoolQueries over the informer caches: no API call per query. */
export class CachedAgentPoolQueries implements AgentPoolQueries {
  constructor(
    private readonly pools: Informer<IPPool>,
    private readonly pods: CacheReader<V1Pod>,
    private readonly deployments: Informer<V1Deployment>,
    private readonly agentNamespace: string,
    private readonly mode: AgentMode,
  ) {}

  async all(): Promise<AgentPoolView[]> {
    return this.pools.list().map((pool) => this.view(pool));
  }

  async get(namespace: string, name: string): Promise<AgentPoolView | undefined> {
    const pool = this.pools.get(namespace, name);
    return pool ? this.view(pool) : undefined;
  }

  private view(pool: IPPool): AgentPoolView {
    const namespace = pool.metadata!.namespace!;
    const name = pool.metadata!.name!;
    const status = pool.status ?? {};
    const deploymentMode = this.mode === 'deployment';
    let runningImage: string | null = null;
    let agentRef: string | null = null;
    let agentUid: string | null = null;
    let desiredImage: string | null;
    if (deploymentMode) {
      const deployment = this.deployments.get(this.agentNamespace, agentName(namespace, name));
      desiredImage = (deployment && deploymentImage(deployment)) ?? status.agentDeploymentRef?.image ?? null;
      // The image every available replica runs once the rollout is complete; mixed while rolling.
      const images = new Set(
        this.pods
          .byIndex('pool', `${namespace}/${name}`)
          .filter((p) => !p.metadata?.deletionTimestamp)
          .map((p) => podImage(p)),
      );
      runningImage = images.size === 1 ? ([...images][0] ?? null) : null;
      if (deployment) {
        agentRef = `${deployment.metadata?.namespace}/${deployment.metadata?.name}`;
        agentUid = deployment.metadata?.uid ?? null;
      }
    } else {
      const ref = status.agentPodRef;
      desiredImage = ref?.image ?? null;
      const pod = ref?.name ? this.pods.get(ref.namespace ?? this.agentNamespace, ref.name) : undefined;
      // A Terminating agent still runs (and serves) until it is gone.
      runningImage = (pod && podImage(pod)) || null;
      if (ref?.name) agentRef = `${ref.namespace ?? this.agentNamespace}/${ref.name}`;
      agentUid = ref?.uid ?? null;
    }
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
      held: pool.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined,
      mode: deploymentMode ? 'DEPLOYMENT' : 'POD',
      desiredImage,
      runningImage,
      agentRef,
      agentUid,
      agentReady: conditionTrue(status.conditions, 'AgentReady'),
      conditions,
      driftSince: status.lastUpdate ? new Date(status.lastUpdate) : null,
    };
  }
}
