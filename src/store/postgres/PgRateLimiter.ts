import type pg from 'pg';
import { UnavailableError } from '../../errors.js';
import { databaseUnreachableMessage, isDatabaseUnreachable } from '../../util/databaseUnreachable.js';

/**
 * A token bucket per caller, shared by every replica on one PostgreSQL: the same refill rule as the in-process
 * CallerRateLimiter (refills at `perMinute` up to `burst`; a take of `amount` units succeeds only whole), but the
 * bucket is a row of "RateBucket" and each take is one atomic upsert. The row lock of INSERT … ON CONFLICT DO UPDATE
 * serializes concurrent takes of one caller from any replica, and every SET expression reads the row as it was
 * before this take, so a limit of 60/min holds for the whole deployment. Time is the database's clock
 * (clock_timestamp), so replicas with skewed clocks still share one bucket consistently.
 *
 * A full bucket holds no state worth keeping (a deleted row starts full again, which is the same thing), so buckets that
 * have refilled completely are deleted: at most once per `pruneIntervalMs` (a minute), the first take after the
 * interval starts one DELETE and does not wait for it. Without it the table would grow by one row per caller forever
 * (a deployment issuing short-lived tokens). The DELETE decides fullness per row with the database's clock, and a row
 * a concurrent take changes is re-checked after that take (READ COMMITTED re-evaluates the WHERE on the new version),
 * while a take that comes after the DELETE inserts a full bucket, which is what was deleted: pruning never hands a
 * caller more than its budget. A revoked token's bucket is not deleted at revocation: it is pruned once full (burst ÷
 * rate later, 20 s at the defaults), and deleting it earlier would refill a drained bucket for a token that is reissued.
 * Every replica's limiter prunes with the deployment's one rate and burst (config), so they agree on what is full.
 */
const TAKE = `
INSERT INTO "RateBucket" AS b ("key", "tokens", "refilledAt", "granted")
SELECT $1, $2::float8 - $3::float8, extract(epoch FROM clock_timestamp()) * 1000, true
ON CONFLICT ("key") DO UPDATE SET
  "granted" = LEAST($2::float8, b."tokens" + GREATEST(0, EXCLUDED."refilledAt" - b."refilledAt") * $4::float8) >= $3::float8,
  "tokens" = LEAST($2::float8, b."tokens" + GREATEST(0, EXCLUDED."refilledAt" - b."refilledAt") * $4::float8)
    - CASE WHEN LEAST($2::float8, b."tokens" + GREATEST(0, EXCLUDED."refilledAt" - b."refilledAt") * $4::float8) >= $3::float8 THEN $3::float8 ELSE 0 END,
  "refilledAt" = GREATEST(b."refilledAt", EXCLUDED."refilledAt")
RETURNING "granted", "tokens"`;

/** Deletes the buckets that have refilled to the burst ($1) at the rate ($2, units per ms) by now. */
const PRUNE = `
DELETE FROM "RateBucket" b
 WHERE b."tokens" + GREATEST(0, extract(epoch FROM clock_timestamp()) * 1000 - b."refilledAt") * $2::float8 >= $1::float8`;

export interface PgRateLimiterOptions {
  /** Full buckets are deleted at most this often (default 60 s). */
  pruneIntervalMs?: number;
  /** The clock that spaces the prunes (fullness itself is decided by the database's clock). */
  now?: () => number;
}

export class PgRateLimiter {
  private readonly pruneIntervalMs: number;
  private readonly now: () => number;
  private lastPruneAt: number;
  private pruning: Promise<number> | undefined;

  constructor(
    private readonly pool: Pick<pg.Pool, 'query'>,
    private readonly perMinute: number,
    private readonly burst: number,
    options: PgRateLimiterOptions = {},
  ) {
    this.pruneIntervalMs = options.pruneIntervalMs ?? 60_000;
    this.now = options.now ?? Date.now;
    this.lastPruneAt = this.now();
  }

  /** Deletes every bucket that is full again; returns how many. */
  async prune(): Promise<number> {
    try {
      return (await this.pool.query(PRUNE, [this.burst, this.perMinute / 60_000])).rowCount ?? 0;
    } catch (error) {
      if (isDatabaseUnreachable(error)) throw new UnavailableError(`the rate limit buckets cannot be pruned: ${(error as Error).message}`, { cause: error });
      throw error;
    }
  }

  /** The opportunistic prune the last take started (for tests and shutdown); undefined before the first. */
  get lastPrune(): Promise<number> | undefined {
    return this.pruning;
  }

  private pruneIfDue(): void {
    const now = this.now();
    if (now - this.lastPruneAt < this.pruneIntervalMs) return;
    this.lastPruneAt = now;
    // Not awaited by the take, and its failure is the next interval's to retry: a missed prune only delays cleanup.
    this.pruning = this.prune().catch(() => 0);
  }

  /** Takes `amount` units for `key`: 0 when allowed, else the ms until they would be available (nothing is taken). */
  async take(key: string, amount = 1): Promise<number> {
    const wanted = Math.min(amount, this.burst);
    this.pruneIfDue();
    let row: { granted: boolean; tokens: number };
    try {
      row = (await this.pool.query<{ granted: boolean; tokens: number }>(TAKE, [key, this.burst, wanted, this.perMinute / 60_000])).rows[0]!;
    } catch (error) {
      if (isDatabaseUnreachable(error)) throw new UnavailableError(`the rate limit cannot be checked: ${databaseUnreachableMessage(error)}`, { cause: error });
      throw error;
    }
    if (row.granted) return 0;
    return Math.max(1, Math.ceil(((wanted - row.tokens) * 60_000) / this.perMinute));
  }
}
