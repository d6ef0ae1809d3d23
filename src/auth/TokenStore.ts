/** One API token as stored: the secret only as its SHA-256 hash. */
export interface TokenRow {
  id: string;
  name: string;
  role: string;
  hash: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/**
 * Where API tokens are kept (store/sqlite/SqliteTokenStore.ts, store/postgres/PgTokenStore.ts; one contract suite,
 * test/store/tokenAuditContract.ts). No cache here: TokenService keeps what it read for up to a second and forgets
 * a token when it is revoked or its revocation is announced (auth/TokenCache.ts says how promptly that refuses it).
 */
export interface TokenStore {
  /** Inserts a token; undefined, changing nothing, when its name (or hash) is taken. */
  insert(row: Omit<TokenRow, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRow | undefined>;
  findById(id: string): Promise<TokenRow | undefined>;
  findByName(name: string): Promise<TokenRow | undefined>;
  findByHash(hash: string): Promise<TokenRow | undefined>;
  count(): Promise<number>;
  /** Gives the token a new secret and role, not revoked and not expiring (the configured admin token's rotation). */
  reissue(id: string, change: { hash: string; role: string }): Promise<void>;
  /** A hint of last use; at most one write per token per minute is asked for. */
  touch(id: string, at: Date): Promise<void>;
  /**
   * Marks the token revoked at `at` (a token revoked already keeps its first time) and tells every replica, in the
   * same commit, so that each closes the token's subscriptions (`watchRevocations`). Undefined when there is no such
   * token.
   */
  revoke(id: string, at: Date): Promise<TokenRow | undefined>;
  /** Tokens with id > afterId, by id. */
  page(afterId: string | undefined, limit: number): Promise<TokenRow[]>;
  /**
   * Calls `listener(tokenId)` for every revocation committed by any replica, and `listener(undefined)` when some may
   * have been missed (after a reconnect, and every few seconds as a safety net): the caller then checks the tokens it
   * holds sockets for. SQLite: one process, so nothing to watch (revoke's caller closes the sockets itself).
   * `connection.lost()` is called when announcements stop reaching this replica (the connection that carries them
   * failed or ended), `connection.back()` when they reach it again.
   */
  watchRevocations(
    listener: (tokenId: string | undefined) => void,
    onError?: (error: Error) => void,
    connection?: { lost(): void; back(): void },
  ): Promise<{ stop(): Promise<void> }>;
}
