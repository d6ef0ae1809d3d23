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
 * Rows are bounded by the number of callers (one per token, plus "anonymous"); a full bucket holds no state worth
 * keeping, and a deleted row starts full again, which is the same thing.
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

export class PgRateLimiter {
  constructor(
    private readonly pool: Pick<pg.Pool, 'query'>,
    private readonly perMinute: number,
    private readonly burst: number,
  ) {}

  /** Takes `amount` units for `key`: 0 when allowed, else the ms until they would be available (nothing is taken). */
  async take(key: string, amount = 1): Promise<number> {
    const wanted = Math.min(amount, this.burst);
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
