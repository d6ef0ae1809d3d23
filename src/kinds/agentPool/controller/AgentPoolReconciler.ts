import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../../controller/Informer.js';
import type { Reconciler, Result } from '../../../controller/Controller.js';
import type { Request } from '../../../controller/request.js';
import { EventType } from '../../../domain/events.js';
import { ConflictError, NotFoundError } from '../../../errors.js';
import { kubeCall, type KubeClients } from '../../../kube/index.js';
import type { Logger } from '../../../log.js';
import type { KindEvents } from '../../../controllers/kindHost.js';
import type { RecordOnce } from '../../../controllers/RecordOnce.js';
import { agentPodManifest, type AgentSettings } from './manifests.js';
import { agentsManagedBy } from './mode.js';
import type { AgentPoolMetrics } from './metrics.js';
import type { EndedRolloutHolds } from './EndedRolloutHolds.js';
import {
  agentName,
  IPPOOL_GROUP,
  IPPOOL_PLURAL,
  IPPOOL_VERSION,
  LABEL_CLUSTER_NETWORK,
  LABEL_POOL_NAME,
  LABEL_POOL_NAMESPACE,
  poolKey,
  splitNetworkName,
} from './names.js';
import { isNodeReady, isPodReady, podImage, podReadySince, setCondition } from './podFacts.js';
import type { AgentRef, IPPool, NetworkAttachmentDefinition, PoolCondition, RecreationRecord } from './types.js';
import { normalizeImage, type VmDhcpControllerState } from './VmDhcpControllerWatch.js';

export interface AgentPoolReconcilerDeps {
  clients: KubeClients;
  /** The kind's history (AgentForceDeleted). */
  history: Pick<KindEvents, 'append'>;
  /** Recreation intents (durable; recording one appends its AgentRecreated event and removes it in one transaction). */
  recreations: RecordOnce<RecreationRecord>;
  metrics: AgentPoolMetrics;
  logger: Logger;
  pools: Informer<IPPool>;
  pods: CacheReader<V1Pod>;
  nads: Informer<NetworkAttachmentDefinition>;
  nodes: Informer<V1Node>;
  settings: AgentSettings;
  /** Image of agents of pools that have none recorded yet (upstream: the controller's agent image). */
  defaultImage: string;
  /** The vm-dhcp-controller as last seen: while it deploys agents, this reconciler only watches (docs/adr/0017). */
  controllerState: () => VmDhcpControllerState;
  /** Beside the controller: takes off holds that ended rollouts' late writes left (absent where no history is at hand). */
  endedRolloutHolds?: Pick<EndedRolloutHolds, 'sweep'>;
  /** Seconds an agent may stay Terminating on a NotReady node before it is force-deleted; null disables. */
  stuckGraceSeconds: number | null;
  now?: () => number;
}

/**
 * A loop's failure: its text becomes the condition message (spec: reason `Error`, the error text as message). It is
 * control flow, thrown on most reconciles of a pool in flight ("not ready"), so it captures no stack trace.
 */
class LoopError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

interface Work {
  pool: IPPool;
  status: NonNullable<IPPool['status']>;
  conditions: PoolCondition[];
  now: Date;
  result: Result;
  /** An API failure to rethrow after the status is written, so the key is retried with backoff. */
  apiError?: unknown;
}

/**
 * Beside a vm-dhcp-controller that deploys agents (coexistence), this reconciler writes nothing to the cluster but the
 * removal of a hold an ended rollout left behind (EndedRolloutHolds): it watches upstream replace agents and records
 * each replacement once, as the rollout's when a rollout released the pool for that image, else as `unplanned`.
 *
 * Direct mode (no controller deploys agents): the upstream IPPool loops (register → cache → monitor), level-based on one pool, plus rollplane's fixes: the
 * configured image never overwrites a pool's recorded image (admission does that), agents stuck Terminating on a
 * NotReady node are force-deleted after a grace period, and every recreation is recorded once as AgentRecreated.
 * One reconcile ends in at most one status write (optimistic concurrency on the pool's resourceVersion), so it never
 * clobbers an image the rollout engine admitted meanwhile.
 */
export class AgentPoolReconciler implements Reconciler {
  private readonly now: () => number;
  /**
   * Pools this controller wrote, until the cache shows the write: `stale` holds the resourceVersions the writes
   * replaced. A cache still showing one of them is behind our own write, and acting on it would, for example, take the
   * agent just created for a stranger (uid mismatch) and delete it.
   */
  private readonly written = new Map<string, { stale: Set<string>; pool: IPPool }>();
  /** Uids of pods this process force-deleted (bounded; insertion-ordered). */
  private readonly forceDeleted = new Set<string>();
  /** Coexistence: the last Ready agent seen per pool (uid, image), to notice upstream replacing it. */
  private readonly lastAgent = new Map<string, { uid: string; image: string | null }>();

  constructor(private readonly deps: AgentPoolReconcilerDeps) {
    this.now = deps.now ?? Date.now;
  }

  async reconcile(request: Request): Promise<Result | void> {
    const namespace = request.namespace ?? '';
    const name = request.name;
    const pool = this.freshest(namespace, name);
    if (agentsManagedBy(this.deps.controllerState()) === 'upstream') {
      const swept = pool && !pool.metadata?.deletionTimestamp ? await this.deps.endedRolloutHolds?.sweep(pool) : undefined;
      return (await this.watchUpstream(namespace, name, pool)) ?? swept;
    }
    if (!pool || pool.metadata?.deletionTimestamp) {
      await this.removeAgents(namespace, name);
      return;
    }
    const work: Work = {
      pool,
      status: structuredClone(pool.status ?? {}),
      conditions: structuredClone(pool.status?.conditions ?? []),
      now: new Date(this.now()),
      result: {},
    };
    if (pool.spec?.paused) {
      await this.removeAgents(namespace, name);
      delete work.status.agentPodRef;
      // As upstream: each of its three status handlers fails with the same error, and OnChange sets Stopped.
      const disabled = new LoopError(`ippool ${namespace}/${name} was administratively disabled`);
      for (const type of ['Registered', 'CacheReady', 'AgentReady']) this.condition(work, type, disabled);
      work.conditions = setCondition(work.conditions, 'Stopped', 'True', work.now);
      await this.writeStatus(work);
      return;
    }
    // Upstream's OnChange writes Stopped False on every pool that is not paused; rollplane only once a pool has been
    // paused, so that a fleet upstream deployed long ago costs no status write per pool when rollplane takes over.
    if (work.conditions.some((c) => c.type === 'Stopped')) work.conditions = setCondition(work.conditions, 'Stopped', 'False', work.now);
    await this.podMode(work);
    try {
      await this.writeStatus(work);
    } catch (error) {
      // Someone (the rollout engine's admission, usually) wrote the pool since the cache was read. Its watch event
      // requeues the pool, and the next reconcile adopts whatever this one created; the rate limiter stays out of it.
      if (error instanceof ConflictError && !work.apiError) return { requeueAfterMs: 1000 };
      throw error;
    }
    if (work.apiError) throw work.apiError;
    return work.result;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Pod mode

  private async podMode(work: Work): Promise<void> {
    const { namespace, name } = this.ids(work.pool);
    const agentNs = this.deps.settings.namespace;

    let pod: V1Pod | undefined;
    await this.loop(work, 'Registered', async () => {
      const clusterNetwork = this.clusterNetworkOf(work.pool);
      const ref: AgentRef = work.status.agentPodRef ?? {};
      const refNs = ref.namespace ?? agentNs;
      const refName = ref.name ?? agentName(namespace, name);
      pod = this.deps.pods.get(refNs, refName);
      if (!ref.uid) {
        if (pod && this.ownedBy(pod, namespace, name)) {
          // A previous reconcile created it but could not record it: adopt instead of recreating.
          work.status.agentPodRef = { namespace: refNs, name: refName, image: ref.image ?? podImage(pod), uid: pod.metadata!.uid! };
        } else {
          pod = await this.createPod(work, clusterNetwork, ref.image ?? this.deps.defaultImage);
        }
      } else if (!pod || pod.metadata?.uid !== ref.uid) {
        // Missing or a stranger in the cache: the cache may lag behind a pod this controller just created, so ask the
        // API — unless this is the recreation in flight (the recorded agent was deleted on purpose).
        const record = this.recreationOf(work.pool);
        pod = record && record.oldUid === ref.uid && !pod ? undefined : await this.readPod(refNs, refName);
        // A restart between creating the new agent and recording it: the pod is the recreation's own new agent.
        if (
          pod &&
          record &&
          record.oldUid === ref.uid &&
          pod.metadata?.uid !== record.oldUid &&
          this.ownedBy(pod, namespace, name) &&
          !pod.metadata?.deletionTimestamp
        ) {
          work.status.agentPodRef = { ...ref, namespace: refNs, name: refName, uid: pod.metadata!.uid! };
        }
        if (!pod) {
          this.deps.logger.info({ pool: poolKey(namespace, name) }, `agent pod ${refName} missing, redeploying`);
          if (!this.recreationOf(work.pool)) await this.writeRecord(work, { reason: 'missing', oldUid: ref.uid, oldImage: ref.image ?? null });
          pod = await this.createPod(work, clusterNetwork, ref.image ?? this.deps.defaultImage);
        }
      }
      if (pod!.metadata?.deletionTimestamp) {
        await this.handleTerminating(work, pod!);
        throw new LoopError(`agent pod ${pod!.metadata.name} marked for deletion`);
      }
      if (pod!.metadata?.uid !== work.status.agentPodRef?.uid) throw new LoopError(`agent pod ${pod!.metadata?.name} uid mismatch`);
    });
    work.conditions = setCondition(work.conditions, 'CacheReady', 'True', work.now);

    await this.loop(work, 'AgentReady', async () => {
      const ref = work.status.agentPodRef;
      if (!ref?.uid) throw new LoopError(`agent for ippool ${namespace}/${name} is not deployed`);
      let current = pod ?? this.deps.pods.get(ref.namespace ?? agentNs, ref.name ?? '');
      // The pod cache may still show an agent that is already gone: confirm before calling the current one a stranger.
      if (current && current.metadata?.uid !== ref.uid) current = await this.readPod(ref.namespace ?? agentNs, ref.name ?? '');
      // Upstream's messages (MonitorAgent): the Get's NotFound, then "marked for deletion" / "obsolete and purged".
      if (!current) throw new LoopError(`pods "${ref.name}" not found`);
      const uidMismatch = current.metadata?.uid !== ref.uid;
      if (uidMismatch || podImage(current) !== ref.image) {
        if (current.metadata?.deletionTimestamp) throw new LoopError(`agent pod ${ref.name} marked for deletion`);
        if (!this.recreationOf(work.pool)) {
          await this.writeRecord(work, {
            reason: uidMismatch ? 'uid-mismatch' : 'drift',
            oldUid: current.metadata?.uid ?? null,
            oldImage: podImage(current) ?? null,
          });
        }
        await this.deletePod(current, undefined);
        throw new LoopError(`agent pod ${current.metadata?.name} obsolete and purged`);
      }
      if (!isPodReady(current)) throw new LoopError(`agent pod ${current.metadata?.name} not ready`);
      const record = this.recordOf(work.pool);
      if (record?.deletedAt) await this.completeRecreation(work, record, { image: ref.image ?? '', uid: ref.uid, readyAt: podReadySince(current) ?? work.now });
      // Admitted, and the agent already runs the planned image: nothing is recreated, and nothing is recorded.
      else if (record && record.plannedImage === ref.image) await this.deps.recreations.drop(namespace, name);
    });
  }

  /** Stuck agents (upstream priority/1): Terminating on a NotReady node for longer than the grace period. */
  private async handleTerminating(work: Work, pod: V1Pod): Promise<void> {
    const grace = this.deps.stuckGraceSeconds;
    const nodeName = pod.spec?.nodeName;
    if (grace === null || !nodeName || isNodeReady(this.deps.nodes.get(undefined, nodeName))) return;
    const deletionTimestamp = Date.parse(pod.metadata!.deletionTimestamp as unknown as string);
    const requestedAt = deletionTimestamp - (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000;
    const waited = work.now.getTime() - requestedAt;
    if (waited < grace * 1000) {
      this.requeueAfter(work, grace * 1000 - waited + 10);
      return;
    }
    const { namespace, name } = this.ids(work.pool);
    // The cache shows the pod until its deletion arrives: never force-delete (and report) one pod twice.
    if (this.forceDeleted.has(pod.metadata?.uid ?? '')) return;
    if (!this.recreationOf(work.pool))
      await this.writeRecord(work, { reason: 'force-deleted', oldUid: pod.metadata?.uid ?? null, oldImage: podImage(pod) ?? null });
    const deleted = await this.deletePod(pod, 0);
    this.forceDeleted.add(pod.metadata?.uid ?? '');
    if (this.forceDeleted.size > 10_000) this.forceDeleted.delete(this.forceDeleted.values().next().value!);
    if (!deleted) return;
    this.deps.metrics.forceDeletions.inc();
    await this.deps.history.append({
      type: EventType.AgentForceDeleted,
      rolloutId: this.deps.recreations.rolloutOf(namespace, name),
      namespace,
      name,
      payload: {
        pool: poolKey(namespace, name),
        pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
        podUid: pod.metadata?.uid ?? null,
        node: nodeName,
        terminatingSeconds: Math.round(waited / 100) / 10,
        graceSeconds: grace,
      },
    });
    this.deps.logger.warn(
      { pool: poolKey(namespace, name), pod: pod.metadata?.name, node: nodeName },
      'force-deleted an agent pod stuck Terminating on a NotReady node',
    );
    this.requeueAfter(work, 0);
  }

  private async createPod(work: Work, clusterNetwork: string, image: string): Promise<V1Pod> {
    const body = agentPodManifest(work.pool, image, clusterNetwork, this.deps.settings);
    const ns = body.metadata!.namespace!;
    try {
      const created = await kubeCall(`create agent pod ${body.metadata!.name}`, () => this.deps.clients.core.createNamespacedPod({ namespace: ns, body }));
      work.status.agentPodRef = { namespace: ns, name: created.metadata!.name!, image, uid: created.metadata!.uid! };
      return created;
    } catch (error) {
      // AlreadyExists: a pod of this name appeared (cache lag, or a terminating one); register sorts it out next time.
      const existing = await this.readPod(ns, body.metadata!.name!);
      if (!existing) throw error;
      return existing;
    }
  }

  private async readPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    try {
      return await kubeCall(`read agent pod ${name}`, () => this.deps.clients.core.readNamespacedPod({ namespace, name }));
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /** False when the pod was already gone (or replaced: the uid precondition failed). */
  private async deletePod(pod: V1Pod, gracePeriodSeconds: number | undefined): Promise<boolean> {
    try {
      await kubeCall(`delete agent pod ${pod.metadata?.name}`, () =>
        this.deps.clients.core.deleteNamespacedPod({
          namespace: pod.metadata!.namespace!,
          name: pod.metadata!.name!,
          ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
          body: { preconditions: { uid: pod.metadata!.uid! }, ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof NotFoundError || (error instanceof ConflictError && gracePeriodSeconds === 0)) return false;
      throw error;
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Coexistence: upstream deploys and replaces agents; this only records what it sees

  /**
   * A replacement starts when the agent the pool records is going (Terminating, or its image differs from the ref,
   * which upstream's monitor is about to act on) or gone; it completes when the ref names a new Ready agent on the
   * ref's image. It is the rollout's when a rollout released the pool for that very image, else `unplanned` (a helm
   * upgrade, someone deleting an agent). Paused and deleted pools lose their agent on purpose: not a replacement.
   */
  private async watchUpstream(namespace: string, name: string, pool: IPPool | undefined): Promise<Result | void> {
    const key = poolKey(namespace, name);
    if (!pool || pool.metadata?.deletionTimestamp || pool.spec?.paused) {
      this.lastAgent.delete(key);
      return;
    }
    const now = new Date(this.now());
    const ref = pool.status?.agentPodRef;
    const current = ref?.name ? this.deps.pods.get(ref.namespace ?? this.deps.settings.namespace, ref.name) : undefined;
    const live = current !== undefined && current.metadata?.uid === ref?.uid && !current.metadata?.deletionTimestamp;
    let record = this.recordOf(pool);
    if (!record?.deletedAt) {
      let old: { uid: string; image: string | null } | undefined;
      if (current && current.metadata?.uid === ref?.uid && (current.metadata?.deletionTimestamp || podImage(current) !== ref?.image)) {
        old = { uid: current.metadata!.uid!, image: podImage(current) ?? null };
      } else {
        const seen = this.lastAgent.get(key);
        if (seen && !(live && current!.metadata?.uid === seen.uid)) old = seen;
      }
      if (old) {
        // The ref's image may still be the old one here (the pod and pool watches are not ordered): which image the
        // release asked for is decided against the new agent, at the end. The release's intent says which rollout.
        const rolloutId = record?.rolloutId ?? null;
        record = {
          reason: rolloutId ? 'rollout' : 'unplanned',
          oldUid: old.uid,
          oldImage: old.image,
          rolloutId,
          plannedImage: record?.plannedImage ?? null,
          deletedAt: now.toISOString(),
        };
        await this.deps.recreations.intend(namespace, name, { ...record, rolloutId });
        this.lastAgent.delete(key);
      }
    }
    if (!live || !isPodReady(current!) || podImage(current!) !== ref?.image) return;
    const uid = current!.metadata!.uid!;
    if (record?.deletedAt && record.oldUid !== uid) {
      const image = podImage(current!) ?? '';
      // The rollout's only if it released the pool for this very image (a helm upgrade meanwhile makes it unplanned).
      // Which rollout released it is in the intent, which a restart of rollplane reloads.
      const planned = !!record.rolloutId && normalizeImage(record.plannedImage ?? '') === normalizeImage(image);
      const work = { pool, now } as Work;
      const final: RecreationRecord = planned ? { ...record, reason: 'rollout' } : { ...record, reason: 'unplanned', rolloutId: null };
      await this.completeRecreation(work, final, { image, uid, readyAt: podReadySince(current!) ?? now }, planned ? undefined : null);
    }
    this.lastAgent.set(key, { uid, image: podImage(current!) ?? null });
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Recreation records and events

  /** The pool's recreation intent: admitted by a rollout, or a recreation under way. */
  recordOf(pool: IPPool): RecreationRecord | undefined {
    const { namespace, name } = this.ids(pool);
    return this.deps.recreations.get(namespace, name);
  }

  /** The pool's recreation under way (its old agent went), if any; an intent that is only admitted is none. */
  private recreationOf(pool: IPPool): RecreationRecord | undefined {
    const record = this.recordOf(pool);
    return record?.deletedAt ? record : undefined;
  }

  /**
   * Durable before the act: committed before the old agent is deleted, so a restart still knows what it replaced. The
   * rollout the admission intent names (if any) stays.
   */
  private async writeRecord(work: Work, record: Pick<RecreationRecord, 'reason' | 'oldUid' | 'oldImage'>): Promise<void> {
    const { namespace, name } = this.ids(work.pool);
    const admitted = this.recordOf(work.pool);
    await this.deps.recreations.intend(namespace, name, { ...admitted, ...record, rolloutId: admitted?.rolloutId ?? null, deletedAt: work.now.toISOString() });
  }

  /** The AgentRecreated event and the removal of the intent, in one transaction: exactly once, also across a crash. */
  /** `rolloutId` null: the recreation is nobody's (coexistence, unplanned), whatever rollout last touched the pool. */
  private async completeRecreation(
    work: Work,
    record: RecreationRecord,
    next: { image: string; uid: string | null; readyAt: Date },
    rolloutId?: null,
  ): Promise<void> {
    const { namespace, name } = this.ids(work.pool);
    const deletedAt = new Date(record.deletedAt ?? work.now);
    const readyAt = next.readyAt.getTime() < deletedAt.getTime() ? work.now : next.readyAt;
    const seconds = Math.max(0, (readyAt.getTime() - deletedAt.getTime()) / 1000);
    const recorded = await this.deps.recreations.record(namespace, name, () => ({
      type: EventType.AgentRecreated,
      ...(rolloutId === null ? { rolloutId: null } : {}),
      payload: {
        pool: poolKey(namespace, name),
        oldImage: record.oldImage,
        newImage: next.image,
        oldPodUid: record.oldUid,
        newPodUid: next.uid,
        reason: record.reason,
        // Recorded as such: upstream replaced the agent, and no rollout of rollplane asked for it.
        ...(record.reason === 'unplanned' ? { planned: false } : {}),
        deletedAt: record.deletedAt,
        readyAt: readyAt.toISOString(),
        seconds,
      },
    }));
    if (!recorded) return;
    this.deps.metrics.recreations.inc({ reason: record.reason });
    this.deps.metrics.recreationSeconds.observe({ reason: record.reason }, seconds);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Shared

  private freshest(namespace: string, name: string): IPPool | undefined {
    const key = poolKey(namespace, name);
    const cached = this.deps.pools.get(namespace, name);
    const mine = this.written.get(key);
    if (mine && cached && mine.stale.has(cached.metadata?.resourceVersion ?? '')) return mine.pool;
    this.written.delete(key);
    return cached;
  }

  private remember(before: IPPool, after: IPPool): void {
    const key = poolKey(after.metadata!.namespace!, after.metadata!.name!);
    const entry = this.written.get(key) ?? { stale: new Set<string>(), pool: after };
    entry.stale.add(before.metadata?.resourceVersion ?? '');
    entry.pool = after;
    this.written.set(key, entry);
  }

  private async loop(work: Work, condition: string, body: () => Promise<void>): Promise<boolean> {
    try {
      await body();
      work.conditions = setCondition(work.conditions, condition, 'True', work.now);
      return true;
    } catch (error) {
      this.condition(work, condition, error);
      if (!(error instanceof LoopError)) work.apiError ??= error;
      return false;
    }
  }

  private condition(work: Work, type: string, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    work.conditions = setCondition(work.conditions, type, 'False', work.now, 'Error', message);
  }

  private requeueAfter(work: Work, ms: number): void {
    const current = work.result.requeueAfterMs;
    work.result.requeueAfterMs = current === undefined ? ms : Math.min(current, ms);
  }

  private async writeStatus(work: Work): Promise<void> {
    const next = { ...work.status, conditions: work.conditions };
    if (next.agentPodRef === undefined) delete next.agentPodRef;
    if (JSON.stringify(next) === JSON.stringify(work.pool.status ?? {})) return;
    const { namespace, name } = this.ids(work.pool);
    next.lastUpdate = work.now.toISOString();
    const body: IPPool = { ...work.pool, status: next };
    const updated = (await kubeCall(`update ippool ${namespace}/${name} status`, () =>
      this.deps.clients.custom.replaceNamespacedCustomObjectStatus({
        group: IPPOOL_GROUP,
        version: IPPOOL_VERSION,
        plural: IPPOOL_PLURAL,
        namespace,
        name,
        body,
      }),
    )) as IPPool;
    this.remember(work.pool, updated);
    work.pool = updated;
  }

  private clusterNetworkOf(pool: IPPool): string {
    const { namespace } = this.ids(pool);
    const networkName = pool.spec?.networkName ?? '';
    const nadRef = splitNetworkName(networkName, namespace);
    const nad = this.deps.nads.get(nadRef.namespace, nadRef.name);
    // Upstream's messages: the API's NotFound for the NAD (its name only), then DeployAgent's own.
    if (!nad) throw new LoopError(`network-attachment-definitions.k8s.cni.cncf.io "${nadRef.name}" not found`);
    const clusterNetwork = nad.metadata?.labels?.[LABEL_CLUSTER_NETWORK];
    if (!clusterNetwork) throw new LoopError(`could not find clusternetwork for nad ${networkName}`);
    return clusterNetwork;
  }

  private podsOf(namespace: string, name: string): V1Pod[] {
    return this.deps.pods.byIndex('pool', poolKey(namespace, name));
  }

  private ownedBy(pod: V1Pod, namespace: string, name: string): boolean {
    const labels = pod.metadata?.labels ?? {};
    return labels[LABEL_POOL_NAMESPACE] === namespace && labels[LABEL_POOL_NAME] === name;
  }

  private ids(pool: IPPool): { namespace: string; name: string } {
    return { namespace: pool.metadata!.namespace!, name: pool.metadata!.name! };
  }

  /** Pool deleted or paused: its agent goes. */
  private async removeAgents(namespace: string, name: string): Promise<void> {
    for (const pod of this.podsOf(namespace, name)) {
      if (!pod.metadata?.deletionTimestamp) await this.deletePod(pod, undefined);
    }
  }
}
