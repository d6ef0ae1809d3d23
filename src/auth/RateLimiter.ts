/**
 * What the guard asks of a rate limit: take `amount` units for a caller, answering 0 when allowed or the ms until
 * they would be. In process (CallerRateLimiter: synchronous, one replica's buckets) or shared by every replica
 * (store/postgres/PgRateLimiter: one row per caller), chosen by the store in use.
 */
export interface RateLimiter {
  take(key: string, amount?: number): number | Promise<number>;
}
