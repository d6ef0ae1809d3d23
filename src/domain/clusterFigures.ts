/**
 * One rollout kind's figures in one member cluster (the Clusters page, `MemberCluster.kindFigures`): the versions its
 * targets run with counts, and how many drifted. Each kind computes them from its query port in that cluster
 * (src/kinds/<kind>/figures.ts); this module names no kind.
 */
export interface KindClusterFigures {
  /** The most common versions, at most MAX_LISTED_VERSIONS. */
  versions: VersionCount[];
  /** How many targets run a version past those listed (a fleet mid-migration between many builds). */
  otherVersionsCount: number;
  drifted: number;
}

/** Versions listed per kind and cluster: a column of a page, and a bounded list in the query cost estimate. */
export const MAX_LISTED_VERSIONS = 10;

export interface VersionCount {
  /** Null for targets whose version is not known (no agent running, never applied). */
  version: string | null;
  count: number;
}

/** Counts what each target runs in one pass, most common first (ties by version, unknown last): bounded by the targets. */
export class VersionTally {
  private readonly counts = new Map<string | null, number>();
  private driftedCount = 0;

  add(version: string | null, drifted: boolean): void {
    this.counts.set(version, (this.counts.get(version) ?? 0) + 1);
    if (drifted) this.driftedCount++;
  }

  figures(): KindClusterFigures {
    const versions = [...this.counts].map(([version, count]) => ({ version, count }));
    versions.sort((a, b) => b.count - a.count || order(a.version, b.version));
    const unlisted = versions.splice(MAX_LISTED_VERSIONS);
    return { versions, otherVersionsCount: unlisted.reduce((sum, v) => sum + v.count, 0), drifted: this.driftedCount };
  }
}

function order(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}
