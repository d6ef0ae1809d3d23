import { LOCAL_CLUSTER } from './clusters/model.js';
import type { RolloutKind } from './events.js';
import { type AdmittedTarget, clusterOf, type RolloutDriver, type TargetObservation, targetKey } from './ports.js';
import type { Rollout, RolloutService } from './RolloutService.js';

/** What the routing driver asks of the member clusters' runtimes (src/clusters/MemberRuntimes.ts implements it). */
export interface ClusterDrivers {
  /** The kind's driver on the cluster's own runtime, while it runs; undefined while the cluster is not driven. */
  driverOf(cluster: string, kind: RolloutKind): RolloutDriver | undefined;
  /** Why the cluster is not driven now, for people (names the cluster); asked only when driverOf said undefined. */
  whyNotDriven(cluster: string, kind: RolloutKind): string;
}

/** The member clusters a rollout has targets in (its targets never change after the launch, so it is asked once). */
export type RolloutClusters = (rollout: Rollout) => Promise<readonly string[]>;

/** The clusters of a rollout's targets, from the history (`local` first when it has any). */
export function clustersOfRollout(rollouts: Pick<RolloutService, 'allTargets'>): RolloutClusters {
  return async (rollout) => {
    const clusters = new Set((await rollouts.allTargets(rollout.id)).map(clusterOf));
    return [...clusters].sort((a, b) => (a === LOCAL_CLUSTER ? -1 : b === LOCAL_CLUSTER ? 1 : a.localeCompare(b)));
  };
}

/** Rollouts whose clusters are remembered; a rollout asked for again after it was dropped is read again. */
const REMEMBERED_ROLLOUTS = 1_000;

/**
 * One rollout kind's driver over every member cluster (ADR 0055): the engine keeps one driver per kind, and this one
 * sends each target to its cluster's own runtime (own client, informers and work queues), so a slow or unreachable
 * member delays only its own targets. `local`'s driver is the one rollplane always had; a rollout that has only
 * `local` targets never asks anything more.
 *
 * A target in a cluster that is not driven (unreachable, unauthorized, deregistered, or without the kind) is admitted
 * in the history only: its write waits in memory, and `observe` reports it progressing with the reason, which names
 * the cluster — so it fails at its progress deadline with that reason, as any target that does not converge. Once the
 * cluster is driven again, the waiting write is made (drivers' writes are idempotent) before it is observed. After a
 * restart nothing waits in memory: such a target is observed as it is in its cluster and fails at its deadline unless
 * it converged. `prepare` runs per cluster the first time the rollout needs that cluster (and again after a restart;
 * it is idempotent); `finish` on every cluster that is driven then.
 */
export class ClusterRoutedDriver implements RolloutDriver {
  readonly kind: RolloutKind;
  readonly rollbackRules: RolloutDriver['rollbackRules'];
  private readonly clustersByRollout = new Map<string, readonly string[]>();
  /** `rolloutId|cluster` once that cluster's `prepare` ran for the rollout. */
  private readonly prepared = new Set<string>();
  /** `rolloutId|targetKey` of targets admitted while their cluster was not driven. */
  private readonly waiting = new Set<string>();

  constructor(
    private readonly local: RolloutDriver,
    private readonly members: ClusterDrivers,
    private readonly clustersOf: RolloutClusters,
  ) {
    this.kind = local.kind;
    this.rollbackRules = local.rollbackRules;
  }

  async haltReason(rollout: Rollout): Promise<string | undefined> {
    for (const cluster of await this.clusters(rollout)) {
      const driver = this.driverOf(cluster);
      const reason = await driver?.haltReason?.(rollout);
      if (reason) return cluster === LOCAL_CLUSTER ? reason : `in member cluster ${cluster}: ${reason}`;
    }
    return undefined;
  }

  async prepare(rollout: Rollout, signal: AbortSignal): Promise<void> {
    for (const cluster of await this.clusters(rollout)) await this.prepareIn(cluster, rollout, signal);
  }

  async admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    const cluster = clusterOf(target);
    const driver = this.driverOf(cluster);
    if (!driver) {
      this.waiting.add(`${rollout.id}|${targetKey(target)}`);
      return;
    }
    await this.prepareIn(cluster, rollout, signal);
    await driver.admit(target, rollout, signal);
  }

  async observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation> {
    const cluster = clusterOf(target);
    const driver = this.driverOf(cluster);
    if (!driver) return { phase: 'progressing', message: this.members.whyNotDriven(cluster, this.kind) };
    const key = `${rollout.id}|${targetKey(target)}`;
    if (this.waiting.has(key)) {
      // Its write waited for the cluster: make it now, then observe from the next pass on.
      const signal = AbortSignal.timeout(60_000);
      await this.prepareIn(cluster, rollout, signal);
      await driver.admit(target, rollout, signal);
      this.waiting.delete(key);
      return { phase: 'progressing', message: `written to member cluster ${cluster} once it was back` };
    }
    return driver.observe(target, rollout);
  }

  async unavailableOutsideRollout(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number> {
    let total = 0;
    for (const cluster of await this.clusters(rollout)) {
      const driver = this.driverOf(cluster);
      if (!driver?.unavailableOutsideRollout) continue;
      total += await driver.unavailableOutsideRollout(rollout, cluster === LOCAL_CLUSTER ? inRollout : keysIn(cluster, inRollout));
    }
    return total;
  }

  async finish(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    for (const cluster of await this.clusters(rollout)) await this.driverOf(cluster)?.finish?.(rollout, signal, others);
    this.clustersByRollout.delete(rollout.id);
    for (const key of this.prepared) if (key.startsWith(`${rollout.id}|`)) this.prepared.delete(key);
    for (const key of this.waiting) if (key.startsWith(`${rollout.id}|`)) this.waiting.delete(key);
  }

  private driverOf(cluster: string): RolloutDriver | undefined {
    return cluster === LOCAL_CLUSTER ? this.local : this.members.driverOf(cluster, this.kind);
  }

  private async prepareIn(cluster: string, rollout: Rollout, signal: AbortSignal): Promise<void> {
    const key = `${rollout.id}|${cluster}`;
    if (this.prepared.has(key)) return;
    const driver = this.driverOf(cluster);
    if (!driver) return;
    await driver.prepare?.(rollout, signal);
    this.prepared.add(key);
  }

  private async clusters(rollout: Rollout): Promise<readonly string[]> {
    const known = this.clustersByRollout.get(rollout.id);
    if (known) return known;
    const clusters = await this.clustersOf(rollout);
    if (this.clustersByRollout.size >= REMEMBERED_ROLLOUTS) this.clustersByRollout.clear();
    this.clustersByRollout.set(rollout.id, clusters);
    return clusters;
  }
}

/** The keys of `cluster`'s targets among a rollout's target keys, as its own driver names them (without the cluster). */
function keysIn(cluster: string, keys: ReadonlySet<string>): Set<string> {
  const prefix = `${cluster}:`;
  return new Set([...keys].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)));
}
