import { PatchStrategy, setHeaderOptions, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../controller/Informer.js';
import { matchesPoolSelection, type PoolSelection } from '../../domain/agentPools.js';
import type { InFlightNotes } from '../../domain/InFlightChanges.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../domain/ports.js';
import type { Rollout } from '../../domain/RolloutService.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { kubeCall, type KubeClients } from '../../kube/index.js';
import { agentName, AGENT_CONTAINER, ANNOTATION_HOLD, IPPOOL_GROUP, IPPOOL_PLURAL, IPPOOL_VERSION, LABEL_AGENT_MODE, poolKey } from './names.js';
import { deploymentImage, isDeploymentReady, isPodReady, podImage, pullFailure } from './podState.js';
import type { AgentMode, IPPool, RecreationRecord } from './types.js';

export interface AgentPoolDriverOptions {
  clients: KubeClients;
  pools: Informer<IPPool>;
  pods: CacheReader<V1Pod>;
  deployments: Informer<V1Deployment>;
  /** The reconciler's recreations in flight: a target is done once its recreation is recorded. */
  recreations: InFlightNotes<RecreationRecord>;
  agentNamespace: string;
  mode: AgentMode;
  /** Conflict retries of one admission before giving up (the engine retries later). */
  maxConflictRetries?: number;
}

/**
 * What admission means for an agent pool. Pod mode: the new image goes into `status.agentPodRef.image` (status
 * subresource, optimistic concurrency) — exactly what upstream's register loop does for every pool at once, here for
 * one admitted pool; the monitor loop then sees the drift and recreates the agent. Deployment mode: the agent
 * Deployment's template image is patched and the Deployment rolls.
 */
export class AgentPoolDriver implements RolloutDriver {
  readonly kind = 'AGENT_POOL' as const;
  /** pool key → rollout that admitted its current image (AgentRecreated events name it). Refilled by re-admission. */
  private readonly admittedBy = new Map<string, string>();

  constructor(private readonly o: AgentPoolDriverOptions) {}

  rolloutFor(namespace: string, name: string): string | undefined {
    return this.admittedBy.get(poolKey(namespace, name));
  }

  async admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    this.admittedBy.set(poolKey(target.namespace, target.name), rollout.id);
    if (this.o.mode === 'deployment') return this.admitDeployment(target);
    const retries = this.o.maxConflictRetries ?? 5;
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      const pool = attempt === 0 ? this.o.pools.get(target.namespace, target.name) : await this.readPool(target);
      if (!pool) throw new NotFoundError(`ippool ${target.namespace}/${target.name} not found`);
      if (pool.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined) return; // observe reports it as failed
      if (pool.status?.agentPodRef?.image === target.toVersion) return;
      const body: IPPool = { ...pool, status: { ...pool.status, agentPodRef: { ...pool.status?.agentPodRef, image: target.toVersion } } };
      try {
        await kubeCall(`admit ippool ${target.namespace}/${target.name}`, () =>
          this.o.clients.custom.replaceNamespacedCustomObjectStatus({
            group: IPPOOL_GROUP,
            version: IPPOOL_VERSION,
            plural: IPPOOL_PLURAL,
            namespace: target.namespace,
            name: target.name,
            body,
          }),
        );
        return;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= retries) throw error;
      }
    }
  }

  private async admitDeployment(target: AdmittedTarget): Promise<void> {
    const name = agentName(target.namespace, target.name);
    const deployment = this.o.deployments.get(this.o.agentNamespace, name);
    const pool = this.o.pools.get(target.namespace, target.name);
    if (pool?.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined) return;
    if (!deployment) throw new ConflictError(`agent deployment ${this.o.agentNamespace}/${name} does not exist yet`);
    if (deploymentImage(deployment) === target.toVersion) return;
    await kubeCall(`admit agent deployment ${name}`, () =>
      this.o.clients.apps.patchNamespacedDeployment(
        {
          namespace: this.o.agentNamespace,
          name,
          body: { spec: { template: { spec: { containers: [{ name: AGENT_CONTAINER, image: target.toVersion }] } } } },
        },
        // Strategic merge: the containers list merges by name (a JSON merge patch would replace the whole list).
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      ),
    );
  }

  private async readPool(target: AdmittedTarget): Promise<IPPool | undefined> {
    try {
      return (await kubeCall(`read ippool ${target.namespace}/${target.name}`, () =>
        this.o.clients.custom.getNamespacedCustomObject({ group: IPPOOL_GROUP, version: IPPOOL_VERSION, plural: IPPOOL_PLURAL, namespace: target.namespace, name: target.name }),
      )) as IPPool;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  async observe(target: AdmittedTarget): Promise<TargetObservation> {
    const pool = this.o.pools.get(target.namespace, target.name);
    if (!pool) return { phase: 'failed', reason: `ippool ${target.namespace}/${target.name} was deleted` };
    if (pool.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined && !this.runsTarget(pool, target)) {
      return { phase: 'failed', reason: 'pool is held (network.harvesterhci.io/hold-ippool-agent-upgrade)' };
    }
    if (pool.spec?.paused) return { phase: 'failed', reason: 'pool is paused (spec.paused)' };
    if (this.o.mode === 'deployment') return this.observeDeployment(pool, target);
    const ref = pool.status?.agentPodRef;
    if (ref?.image !== target.toVersion) return { phase: 'progressing', message: 'waiting for admission to be recorded' };
    const pod = this.o.pods.get(ref.namespace ?? this.o.agentNamespace, ref.name ?? agentName(target.namespace, target.name));
    if (!pod || podImage(pod) !== target.toVersion) return { phase: 'progressing', message: 'agent being recreated' };
    const failure = pullFailure(pod);
    if (failure) return { phase: 'failed', reason: failure };
    if (pod.metadata?.uid !== ref.uid) return { phase: 'progressing', message: 'new agent not recorded yet' };
    if (!isPodReady(pod)) return { phase: 'progressing', message: 'new agent not ready' };
    // The recreation is complete only once its AgentRecreated event is recorded (with the removal of its record).
    if (this.o.recreations.get(target.namespace, target.name)) return { phase: 'progressing', message: 'recording the recreation' };
    return { phase: 'succeeded' };
  }

  private observeDeployment(pool: IPPool, target: AdmittedTarget): TargetObservation {
    const deployment = this.o.deployments.get(this.o.agentNamespace, agentName(target.namespace, target.name));
    if (!deployment || deploymentImage(deployment) !== target.toVersion) return { phase: 'progressing', message: 'waiting for the template change' };
    let oldAgents = 0;
    for (const pod of this.o.pods.byIndex('pool', poolKey(target.namespace, target.name))) {
      if (pod.metadata?.labels?.[LABEL_AGENT_MODE] !== 'deployment') continue;
      if (podImage(pod) !== target.toVersion) {
        oldAgents++;
        continue;
      }
      const failure = pullFailure(pod);
      if (failure) return { phase: 'failed', reason: failure };
    }
    // The Deployment's status can lag its template for a moment; no agent pod on another image settles it.
    if (!isDeploymentReady(deployment) || oldAgents > 0) return { phase: 'progressing', message: 'deployment rolling' };
    // The reconciler has seen the new image (and recorded the recreation) and finished recording it.
    if (pool.status?.agentDeploymentRef?.image !== target.toVersion || this.o.recreations.get(target.namespace, target.name)) {
      return { phase: 'progressing', message: 'recording the recreation' };
    }
    return { phase: 'succeeded' };
  }

  private runsTarget(pool: IPPool, target: AdmittedTarget): boolean {
    return (this.o.mode === 'pod' ? pool.status?.agentPodRef?.image : pool.status?.agentDeploymentRef?.image) === target.toVersion;
  }

  async unavailableOutsideRollout(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number> {
    const selection = rollout.selector as PoolSelection;
    let count = 0;
    for (const pool of this.o.pools.list()) {
      const ns = pool.metadata?.namespace ?? '';
      const name = pool.metadata?.name ?? '';
      if (inRollout.has(poolKey(ns, name))) continue;
      if (!matchesPoolSelection(selection, { namespace: ns, name, labels: pool.metadata?.labels ?? {} })) continue;
      if (pool.spec?.paused) continue;
      if (!this.agentReady(pool)) count++;
    }
    return count;
  }

  private agentReady(pool: IPPool): boolean {
    const ns = pool.metadata!.namespace!;
    const name = pool.metadata!.name!;
    if (this.o.mode === 'deployment') {
      const deployment = this.o.deployments.get(this.o.agentNamespace, agentName(ns, name));
      return deployment !== undefined && isDeploymentReady(deployment);
    }
    const ref = pool.status?.agentPodRef;
    const pod = ref?.name ? this.o.pods.get(ref.namespace ?? this.o.agentNamespace, ref.name) : undefined;
    return pod !== undefined && isPodReady(pod);
  }
}
