import { LOCAL_CLUSTER } from './clusters/model.js';
import type { RolloutKind } from './events.js';
import { type AdmittedTarget, clusterOf, type RolloutDriver, type TargetObservation } from './ports.js';
import type { NewTarget, Rollout, RolloutService, RolloutTarget } from './RolloutService.js';
import type { LaunchGuard } from './launchRules.js';

/** What the routing driver asks of the member clusters' runtimes (src/clusters/MemberRuntimes.ts implements it). */
export interface ClusterDrivers {
  /**
   * The kind's driver on the cluster's own runtime, while its caches are synced (on any replica): what the engine
   * observes with. Undefined while the cluster is not driven.
   */
  driverOf(cluster: string, kind: RolloutKind): RolloutDriver | undefined;
  /**
   * Where this replica writes to the cluster itself (it holds the cluster's shard, docs/adr/0059): the writes of the
   * cluster's targets. Undefined elsewhere: an admission is then the history's row only, and the holder's executor writes.
   */
  writerOf(cluster: string): MemberWriter | undefined;
  /** Why the cluster is not driven now, for people (names the cluster); asked only when driverOf said undefined. */
  whyNotDriven(cluster: string, kind: RolloutKind): string;
  /**
   * The members whose caches, runtime or health changed since `seq` (every one: undefined; also for an undefined `seq`),
   * and the seq now: a member's drivers answer a read of its caches the same until it is among them.
   */
  changedSince?(seq: number | undefined): MemberChanges;
  /**
   * The kind's driver for counting what is down in the cluster (ClusterRoutedDriver's membersDown): on its caches while
   * they are kept — driven, or unreachable within its cache grace, its last known state — and `syncing` while a driven
   * member's caches are being filled, when nothing is known yet. Without it, driverOf's.
   */
  countingDriverOf?(cluster: string, kind: RolloutKind): RolloutDriver | 'syncing' | undefined;
}

/** ClusterDrivers.changedSince's answer. */
export interface MemberChanges {
  readonly seq: number;
  readonly clusters: ReadonlySet<string> | undefined;
}

/** A member cluster's writes for its targets, made by the replica that holds its shard (MemberTargetExecutor). */
export interface MemberWriter {
  prepare(rollout: Rollout, signal: AbortSignal): Promise<void>;
  admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void>;
  finish(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void>;
  /** Why its last write for the rollout failed (when, and the error), while no later one succeeded. */
  lastWriteFailure(rolloutId: string, target: Pick<AdmittedTarget, 'namespace' | 'name'>): string | undefined;
}

/** The member clusters a rollout has targets in (its targets never change after the launch, so it is asked once). */
export type RolloutClusters = (rollout: Rollout) => Promise<readonly string[]>;

/** The clusters of a rollout's targets, from the history (`local` first when it has any): one index seek per cluster. */
export function clustersOfRollout(rollouts: Pick<RolloutService, 'clustersOf'>): RolloutClusters {
  return async (rollout) => {
    const clusters = await rollouts.clustersOf(rollout.id);
    return [...clusters].sort((a, b) => (a === LOCAL_CLUSTER ? -1 : b === LOCAL_CLUSTER ? 1 : a.localeCompare(b)));
  };
}

/** Rollouts whose clusters are remembered; a rollout asked for again after it was dropped is read again. */
const REMEMBERED_ROLLOUTS = 1_000;
/**
 * How long a member's "no reason to halt" is kept while its caches do not change: beside the vm-dhcp-controller its
 * answer reads the history too (a change of the controller's image recorded later). A release there checks the
 * controller's image itself before it writes, so a halt seen this much later lets nothing wrong through meanwhile.
 */
const MEMBER_HALT_KEPT_MS = 1_000;

/**
 * One rollout kind's driver over every member cluster (ADR 0055, 0059): the engine keeps one driver per kind — and one
 * engine per rollout, on the main leader, since maxUnavailable counts across the rollout — and this one sends each
 * target to its cluster's own runtime (own client, informers and work queues), so a slow or unreachable member delays
 * only its own targets. `local`'s driver is the one rollplane always had; a rollout that has only `local` targets never
 * asks anything more.
 *
 * Reads (observe, haltReason, unavailableOutsideRollout) use the member's caches, which run on every replica. Writes
 * (prepare, admit, finish) are made by the replica that holds the member's shard: here, through the member's
 * executor, when this replica holds it; otherwise an admission is the history's row only (PROGRESSING with its
 * admittedAt, written by the engine), and the holder's executor hears it and writes. A target in a cluster nobody
 * drives (unreachable, unauthorized, deregistered, without the kind) waits the same way: `observe` reports it
 * progressing with a reason that names the cluster, so it fails at its progress deadline as any target that does not
 * converge — unless the cluster is back first, when its holder's executor writes it.
 */
export class ClusterRoutedDriver implements RolloutDriver {
  readonly kind: RolloutKind;
  readonly rollbackRules: RolloutDriver['rollbackRules'];
  private readonly clustersByRollout = new Map<string, readonly string[]>();
  /** `rolloutId|cluster` once `local`'s prepare ran for the rollout. */
  private readonly prepared = new Set<string>();
  /**
   * Per rollout, the members' answers as of their last look (ClusterDrivers.changedSince): each pass asks again only
   * the members that changed since. Every pass asked all of them: over 1,000 members that was most of the service's
   * CPU in the clusters bench (passes follow each other while targets move).
   */
  private readonly haltLooks = new Map<string, { seq: number; at: number; state: Rollout['state'] }>();
  private readonly downLooks = new Map<string, { seq: number; counts: Map<string, number>; total: number }>();

  constructor(
    private readonly local: RolloutDriver,
    private readonly members: ClusterDrivers,
    private readonly clustersOf: RolloutClusters,
    /**
     * Reads a cluster's in-flight notes again from the history before observing one of its targets where another
     * replica writes them (the notes' mirror here is current only for the clusters this replica writes).
     */
    private readonly refreshNotes?: (cluster: string) => Promise<void>,
  ) {
    this.kind = local.kind;
    this.rollbackRules = local.rollbackRules ? (original, targets) => this.rollbackRulesByCluster(original, targets) : undefined;
  }

  /**
   * Each cluster's say in a rollback, from its own driver (its own mode): `local`'s rules were asked for every target,
   * so a rollback of a member's pools beside its vm-dhcp-controller got no guard while `local` ran in direct mode
   * (issue 29). The guards of all clusters apply together; a cluster not driven now has nothing to add.
   */
  private async rollbackRulesByCluster(original: Rollout, targets: readonly NewTarget[]): Promise<{ guard?: LaunchGuard }> {
    const byCluster = new Map<string, NewTarget[]>();
    for (const target of targets) {
      const cluster = clusterOf(target);
      byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), target]);
    }
    const guards: LaunchGuard[] = [];
    for (const [cluster, own] of byCluster) {
      const rules = this.driverOf(cluster)?.rollbackRules;
      const guard = rules ? (await rules(original, own, targets)).guard : undefined;
      if (guard) guards.push(guard);
    }
    if (guards.length === 0) return {};
    return {
      guard: (busy, context) => {
        for (const guard of guards) guard(busy, context);
      },
    };
  }

  /**
   * The first cluster's reason to halt, `local` first. The clusters are asked at once; a member that cannot answer now
   * (its preflight's dry run times out or its API server errs) holds nothing back: its targets wait, and fail at their
   * deadline if it never answers (attack 16, G1/G4: one member whose writes hang kept the whole rollout PENDING). A
   * failure to answer in `local` is retried, as before.
   */
  async haltReason(rollout: Rollout): Promise<string | undefined> {
    const clusters = this.clustersToAskForHalt(rollout, await this.clusters(rollout));
    const reasons = await Promise.all(
      clusters.map((cluster) => {
        const asked = this.driverOf(cluster)?.haltReason?.(rollout);
        return cluster === LOCAL_CLUSTER ? asked : asked?.catch(() => undefined);
      }),
    );
    for (const [i, reason] of reasons.entries()) {
      const cluster = clusters[i]!;
      if (reason) return cluster === LOCAL_CLUSTER ? reason : `in member cluster ${cluster}: ${reason}`;
    }
    return undefined;
  }

  /**
   * The clusters asked whether to halt on this pass: `local` always; the members that changed since the last look (a
   * member that does not change answers the same), and all of them when the rollout is PENDING (its preflight's dry
   * runs), its state changed, or MEMBER_HALT_KEPT_MS passed (beside the controller a member's answer reads the history too).
   */
  private clustersToAskForHalt(rollout: Rollout, clusters: readonly string[]): readonly string[] {
    if (rollout.state === 'PENDING' || !this.members.changedSince) return clusters;
    const last = this.haltLooks.get(rollout.id);
    const changes = this.members.changedSince(last?.seq);
    const now = Date.now();
    const changed = last && last.state === rollout.state && now - last.at < MEMBER_HALT_KEPT_MS ? changes.clusters : undefined;
    remember(this.haltLooks, rollout.id, { seq: changes.seq, at: changed ? last!.at : now, state: rollout.state });
    return changed ? clusters.filter((cluster) => cluster === LOCAL_CLUSTER || changed.has(cluster)) : clusters;
  }

  async prepare(rollout: Rollout, signal: AbortSignal, changingClusters?: () => Promise<ReadonlySet<string>>): Promise<void> {
    const clusters = await this.clusters(rollout);
    // A cluster where the rollout only skips targets (an operator held every pool it selects there) is left alone: its
    // vm-dhcp-controller was moved to the rollout's image, exposing those held pools to it (attack 25, F4).
    const changing = clusters.length > 1 && changingClusters ? await changingClusters() : undefined;
    for (const cluster of clusters) {
      if (changing && !changing.has(cluster)) continue;
      if (cluster === LOCAL_CLUSTER) await this.prepareLocal(rollout, signal);
      else this.members.writerOf(cluster)?.prepare(rollout, signal).catch(ignored);
    }
  }

  /**
   * A member's write is started here and not awaited, as on a replica that does not hold the member's shard (where
   * the admission is the history's row only): the member's executor makes it — before the admission's own row is
   * recorded, or after, when it hears the row — retries it at its resync, and the target fails at its progress
   * deadline if the write never lands. Awaited, a member that does not answer held every admission pass of the rollout
   * (every cluster's) for its request timeout, and failed it: the benchmark's black-holed run ended at 1.5× the
   * healthy one. A member's prepare starts here the same way; its executor prepares before its first admission.
   */
  async admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    const cluster = clusterOf(target);
    if (cluster !== LOCAL_CLUSTER) {
      this.members.writerOf(cluster)?.admit(target, rollout, signal).catch(ignored);
      return;
    }
    await this.prepareLocal(rollout, signal);
    await this.local.admit(target, rollout, signal);
  }

  async observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation> {
    const cluster = clusterOf(target);
    const driver = this.driverOf(cluster);
    if (!driver) return { phase: 'progressing', message: this.members.whyNotDriven(cluster, this.kind) };
    if (cluster === LOCAL_CLUSTER) return driver.observe(target, rollout);
    const writer = this.members.writerOf(cluster);
    if (!writer) await this.refreshNotes?.(cluster);
    const observation = await driver.observe(target, rollout);
    // A target that waits on rollplane's own writes there says why they have not landed (the deadline's error repeats it).
    const failed = observation.phase === 'progressing' ? writer?.lastWriteFailure(rollout.id, target) : undefined;
    if (observation.phase !== 'progressing' || !failed) return observation;
    return { ...observation, message: `${observation.message ?? 'waiting'}; rollplane's last write there failed at ${failed}` };
  }

  /** A target of a member nobody drives now waits behind every other pending target (see RolloutDriver). */
  deferAdmission(target: Pick<RolloutTarget, 'cluster'>): boolean {
    const cluster = clusterOf(target);
    return cluster !== LOCAL_CLUSTER && this.members.driverOf(cluster, this.kind) === undefined;
  }

  async unavailableOutsideRollout(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number> {
    const clusters = await this.clusters(rollout);
    const local = clusters.includes(LOCAL_CLUSTER) ? ((await this.local.unavailableOutsideRollout?.(rollout, inRollout)) ?? 0) : 0;
    return local + (await this.membersDown(rollout, clusters, inRollout));
  }

  /**
   * The members' pools (or nodes) down outside the rollout: read from each member's caches alone, for a rollout whose
   * targets never change, so counted again only for the members that changed since the last look. A member unreachable
   * within its cache grace counts what its caches last showed (attack 25, F3: its down pool stopped counting the moment
   * it turned UNREACHABLE). While a member's caches are first being filled nothing is known: no admission (F2: a leader
   * just started counted such a member's down pool as 0 and admitted one target too many).
   */
  private async membersDown(rollout: Rollout, clusters: readonly string[], inRollout: ReadonlySet<string>): Promise<number> {
    const last = this.downLooks.get(rollout.id);
    const changes = this.members.changedSince?.(last?.seq);
    const changed = last ? changes?.clusters : undefined;
    const counts = changed ? last!.counts : new Map<string, number>();
    let total = changed ? last!.total : 0;
    let syncing = false;
    this.downLooks.delete(rollout.id); // kept again once every count below is in (a failed count leaves none)
    for (const cluster of clusters) {
      if (cluster === LOCAL_CLUSTER || (changed && !changed.has(cluster))) continue;
      const driver = this.members.countingDriverOf ? this.members.countingDriverOf(cluster, this.kind) : this.driverOf(cluster);
      if (driver === 'syncing') {
        syncing = true;
        continue;
      }
      const count = (await driver?.unavailableOutsideRollout?.(rollout, keysIn(cluster, inRollout))) ?? 0;
      total += count - (counts.get(cluster) ?? 0);
      counts.set(cluster, count);
    }
    // Not kept: the next pass counts every member again, this one once it synced.
    if (syncing) return Number.POSITIVE_INFINITY;
    if (changes) remember(this.downLooks, rollout.id, { seq: changes.seq, counts, total });
    return total;
  }

  async finish(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    for (const cluster of await this.clusters(rollout)) {
      // Each cluster's finish hears only of the active rollouts with targets there: a rollout elsewhere to the same
      // image must not keep this cluster's controller on it (each cluster runs its own, issue 29).
      const here: Rollout[] = [];
      for (const other of others) if ((await this.clusters(other)).includes(cluster)) here.push(other);
      if (cluster === LOCAL_CLUSTER) await this.local.finish?.(rollout, signal, here);
      else await this.members.writerOf(cluster)?.finish(rollout, signal, here);
    }
    this.clustersByRollout.delete(rollout.id);
    this.prepared.delete(`${rollout.id}|${LOCAL_CLUSTER}`);
    this.haltLooks.delete(rollout.id);
    this.downLooks.delete(rollout.id);
  }

  private driverOf(cluster: string): RolloutDriver | undefined {
    return cluster === LOCAL_CLUSTER ? this.local : this.members.driverOf(cluster, this.kind);
  }

  private async prepareLocal(rollout: Rollout, signal: AbortSignal): Promise<void> {
    const key = `${rollout.id}|${LOCAL_CLUSTER}`;
    if (this.prepared.has(key)) return;
    await this.local.prepare?.(rollout, signal);
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

/** Keeps a rollout's look, the oldest rollout's forgotten past REMEMBERED_ROLLOUTS (a finished one's go at its finish). */
function remember<T>(looks: Map<string, T>, rolloutId: string, look: T): void {
  looks.delete(rolloutId);
  if (looks.size >= REMEMBERED_ROLLOUTS) looks.delete(looks.keys().next().value!);
  looks.set(rolloutId, look);
}

/** A member write's failure: the member's executor logs it when it tries again (MemberTargetExecutor). */
function ignored(): void {}

/** A rollout view's keys grouped by member cluster, once per keys set (the view keeps the same set across passes). */
const keysByCluster = new WeakMap<ReadonlySet<string>, Map<string, Set<string>>>();
const NO_KEYS: ReadonlySet<string> = new Set();

/**
 * The keys of `cluster`'s targets, without its prefix. Grouped once per set: filtering every key for every cluster on
 * each pass was the largest cost of a rollout over 1,000 clusters (clusters × targets per admission pass).
 */
function keysIn(cluster: string, keys: ReadonlySet<string>): ReadonlySet<string> {
  let grouped = keysByCluster.get(keys);
  if (!grouped) {
    grouped = new Map();
    for (const key of keys) {
      const colon = key.indexOf(':');
      if (colon < 0) continue;
      const member = key.slice(0, colon);
      const mine = grouped.get(member) ?? new Set<string>();
      mine.add(key.slice(colon + 1));
      grouped.set(member, mine);
    }
    keysByCluster.set(keys, grouped);
  }
  return grouped.get(cluster) ?? NO_KEYS;
}
