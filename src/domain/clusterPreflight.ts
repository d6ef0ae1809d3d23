import { AppError, isAppError } from '../errors.js';
import { LOCAL_CLUSTER } from './clusters/model.js';

/**
 * A bump's preflight over the clusters it spans (the dry runs of what the rollout would write first in each, issue 27,
 * ADR 0058): each cluster is asked on its own connection, so they are asked together, a bounded number at a time, and
 * every one is asked even after one refused, so that the refusal names each cluster that refused (issue 29: over 1,000
 * members one after another took 67 s, and the first reset refused the bump naming one member).
 */

/**
 * Clusters asked at once. Each member has its own connection and API budget, so the bound is rollplane's own: its
 * sockets, and the event loop that parses the answers (a member's preflight is one to a few dry runs, each ~1-60 ms).
 * 32 at once turns the 1,000-member preflight from about a minute into seconds without a thousand requests in flight.
 */
export const PREFLIGHT_CONCURRENCY = 32;

/** How often a long preflight says how far it got (it is silent when shorter). */
export const PREFLIGHT_PROGRESS_EVERY_MS = 5_000;

/** A long preflight's progress, for the log. */
export interface PreflightProgress {
  checked: number;
  total: number;
  refused: number;
  elapsedMs: number;
}

export interface PreflightOptions {
  concurrency?: number;
  /** Told every `progressEveryMs` while the preflight runs (a log line at 1,000 members). */
  onProgress?: ((progress: PreflightProgress) => void) | undefined;
  progressEveryMs?: number;
}

/** How many clusters' refusals a combined message names (every one is in `details.clusters`). */
const NAMED_IN_MESSAGE = 20;

/**
 * Runs `check` for each of `clusters` (in order, `concurrency` at a time) and throws when any refused: one refusal as
 * it is; several as the first (by `clusters`' order: `local` first, then by name) with every other refusing cluster
 * named, all of them in `details.clusters`. `check`'s error should already name its cluster.
 */
export async function preflightAcrossClusters<C extends { cluster: string }>(
  clusters: readonly C[],
  check: (item: C) => Promise<void>,
  options: PreflightOptions = {},
): Promise<void> {
  const concurrency = Math.max(1, options.concurrency ?? PREFLIGHT_CONCURRENCY);
  const refusals: { index: number; cluster: string; error: unknown }[] = [];
  let next = 0;
  let checked = 0;
  const started = Date.now();
  const progress = options.onProgress
    ? setInterval(
        () => options.onProgress!({ checked, total: clusters.length, refused: refusals.length, elapsedMs: Date.now() - started }),
        options.progressEveryMs ?? PREFLIGHT_PROGRESS_EVERY_MS,
      )
    : undefined;
  progress?.unref();
  const worker = async () => {
    while (next < clusters.length) {
      const index = next++;
      const item = clusters[index]!;
      try {
        await check(item);
      } catch (error) {
        refusals.push({ index, cluster: item.cluster, error });
      }
      checked++;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, clusters.length) }, worker));
  } finally {
    clearInterval(progress);
  }
  if (refusals.length === 0) return;
  refusals.sort((a, b) => a.index - b.index);
  const [first, ...others] = refusals;
  if (others.length === 0 || !isAppError(first!.error)) throw first!.error;
  const named = others.slice(0, NAMED_IN_MESSAGE).map((r) => r.cluster);
  const more = others.length > named.length ? `, and ${others.length - named.length} more` : '';
  throw new AppError(first!.error.code, `${first!.error.message} (refused in ${others.length} more cluster(s) too: ${named.join(', ')}${more})`, {
    cause: first!.error,
    details: { ...first!.error.details, clusters: refusals.map((r) => r.cluster) },
  });
}

/** A member's refusal names the member: the same `namespace/name` may be in every cluster (attack 16, recheck 2). */
export function refusedIn(cluster: string, error: unknown): never {
  if (cluster === LOCAL_CLUSTER || !isAppError(error)) throw error;
  throw new AppError(error.code, `in member cluster ${cluster}: ${error.message}`, { cause: error, details: { ...error.details, cluster } });
}
