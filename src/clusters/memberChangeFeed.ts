import type { MemberChanges } from '../domain/ClusterRoutedDriver.js';

/**
 * Which members changed, in order: a change of any of a member's caches, its runtime synced or stopped, its health.
 * The routing driver asks each pass of a rollout what changed since its last look and asks again only those members
 * (whether to halt, how many pools are down outside the rollout): asking all 1,000 members on every pass was most of
 * the service's CPU in the clusters bench, for answers of which only the few members with targets in motion had changed.
 * The newest `keep` entries are kept; a look older than that is answered "everything".
 */
export class MemberChangeFeed {
  private log: string[] = [];
  /** The seq of log[0]. */
  private base = 0;

  constructor(private readonly keep = 100_000) {}

  /** A member's caches or runtime changed. */
  note(cluster: string): void {
    this.log.push(cluster);
    if (this.log.length > this.keep) {
      const dropped = this.log.length - Math.floor(this.keep / 2);
      this.log = this.log.slice(dropped);
      this.base += dropped;
    }
  }

  /** The members changed since `seq` (every one when undefined, or older than what is kept), and the seq now. */
  changedSince(seq: number | undefined): MemberChanges {
    const now = this.base + this.log.length;
    if (seq === undefined || seq < this.base) return { seq: now, clusters: undefined };
    const clusters = new Set<string>();
    for (let i = seq - this.base; i < this.log.length; i++) clusters.add(this.log[i]!);
    return { seq: now, clusters };
  }
}
