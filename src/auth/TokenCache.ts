import type { TokenRow } from './TokenStore.js';

/**
 * How long a token read for one request answers the next ones, on PostgreSQL (issue 17: the token look-up was one
 * round trip per request, before any of the request's own reads). SQLite reads the token on every request: in
 * process, about 40 µs, nothing worth a staleness bound.
 *
 * How promptly a revocation takes effect:
 * - on the replica that revokes: at once (`TokenService.revoke` forgets the token before it answers);
 * - on every other replica: when the revocation's announcement arrives (PostgreSQL NOTIFY, delivered at the revoking
 *   COMMIT; `revokedElsewhere` forgets the token), i.e. within milliseconds;
 * - while announcements cannot arrive (the replica's LISTEN connection is down) nothing is cached and every request
 *   reads its token (`suspend`/`resume`), so a database that cannot be reached is still met at authentication (503);
 * - a change made behind the replica's back with no announcement (none of rollplane's own writes but the admin
 *   token's rotation at another replica's start): within this TTL. An expiry is checked on every request.
 */
export const TOKEN_CACHE_TTL_MS = 1_000;

/** Tokens kept at most; beyond it the cache starts over (a flood of distinct valid tokens is not a normal load). */
const TOKENS_KEPT = 1_000;

/**
 * The tokens recently read, by hash. Only tokens that exist are kept: an unknown secret is looked up every time, so a
 * token created on another replica works at once and a flood of guesses cannot fill the cache.
 *
 * A look-up that started before a `forget` must not put back what it read (it may be the row as it was before the
 * revocation): every `forget` starts a new generation, and `put` keeps a row only when it was read in the current one.
 */
export class TokenCache {
  private readonly byHash = new Map<string, { row: TokenRow; readAt: number }>();
  private generationNow = 0;
  private suspended = false;

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = TOKEN_CACHE_TTL_MS,
  ) {}

  /** The generation to hand back to `put` with what a look-up started now read. */
  generation(): number {
    return this.generationNow;
  }

  /** Forgets everything and keeps nothing until `resume` (announcements of revocations cannot arrive meanwhile). */
  suspend(): void {
    this.suspended = true;
    this.forget();
  }

  resume(): void {
    this.suspended = false;
  }

  get(hash: string): TokenRow | undefined {
    if (this.suspended) return undefined;
    const entry = this.byHash.get(hash);
    if (!entry) return undefined;
    if (this.now() - entry.readAt >= this.ttlMs) {
      this.byHash.delete(hash);
      return undefined;
    }
    return entry.row;
  }

  put(hash: string, row: TokenRow, generation: number, readAt: number): void {
    if (this.suspended || generation !== this.generationNow) return;
    if (this.byHash.size >= TOKENS_KEPT) this.byHash.clear();
    this.byHash.set(hash, { row, readAt });
  }

  /** Drops the token (revoked, reissued, or every token when `id` is undefined) and outdates look-ups under way. */
  forget(id?: string): void {
    this.generationNow++;
    if (id === undefined) {
      this.byHash.clear();
      return;
    }
    for (const [hash, entry] of this.byHash) if (entry.row.id === id) this.byHash.delete(hash);
  }
}
