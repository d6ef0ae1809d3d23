import type pg from 'pg';
import type { TokenRow, TokenStore } from '../../auth/TokenStore.js';
import { UnavailableError } from '../../errors.js';
import { PgEventNotifier } from './PgEventNotifier.js';
import { databaseUnreachableMessage, isDatabaseUnreachable } from '../../util/databaseUnreachable.js';
import { isoOf } from './pool.js';

/** The channel a revocation is announced on; the payload is the token id. */
export const REVOCATIONS_CHANNEL = 'rollplane_revocations';

/**
 * API tokens on PostgreSQL, on the history's pg pool. A revocation is announced with NOTIFY in the transaction that
 * writes it, so every replica hears of it at COMMIT (and never of one that rolled back); each replica's
 * `watchRevocations` closes the token's sockets. Notifications sent while a replica's LISTEN connection is down are
 * lost, so the listener is also told "check everything" on every (re)connect and every few seconds.
 */
export class PgTokenStore implements TokenStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  private async rows(text: string, params: unknown[]): Promise<TokenRow[]> {
    try {
      return (await this.pool.query<TokenRow>(text, params)).rows;
    } catch (error) {
      if (isDatabaseUnreachable(error)) throw new UnavailableError(`the token store cannot be read: ${databaseUnreachableMessage(error)}`, { cause: error });
      throw error;
    }
  }

  async insert(row: Omit<TokenRow, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRow | undefined> {
    const inserted = await this.rows(
      'INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt", "expiresAt") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING *',
      [row.id, row.name, row.role, row.hash, isoOf(row.createdAt), isoOf(row.expiresAt)],
    );
    return inserted[0];
  }

  async findById(id: string) {
    return (await this.rows('SELECT * FROM "ApiToken" WHERE "id" = $1', [id]))[0];
  }

  async findByName(name: string) {
    return (await this.rows('SELECT * FROM "ApiToken" WHERE "name" = $1', [name]))[0];
  }

  async findByHash(hash: string) {
    return (await this.rows('SELECT * FROM "ApiToken" WHERE "hash" = $1', [hash]))[0];
  }

  async count(): Promise<number> {
    return ((await this.rows('SELECT COUNT(*) AS n FROM "ApiToken"', [])) as unknown as { n: number }[])[0]!.n;
  }

  async reissue(id: string, change: { hash: string; role: string }): Promise<void> {
    await this.rows('UPDATE "ApiToken" SET "hash" = $1, "role" = $2, "revokedAt" = NULL, "expiresAt" = NULL WHERE "id" = $3', [change.hash, change.role, id]);
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.rows('UPDATE "ApiToken" SET "lastUsedAt" = $1 WHERE "id" = $2', [isoOf(at), id]);
  }

  async revoke(id: string, at: Date): Promise<TokenRow | undefined> {
    // One statement is one transaction: the NOTIFY is delivered at its COMMIT, and only when the token exists.
    const revoked = await this.rows(
      `WITH revoked AS (UPDATE "ApiToken" SET "revokedAt" = COALESCE("revokedAt", $1) WHERE "id" = $2 RETURNING *)
       SELECT revoked.*, pg_notify($3, revoked."id") IS NULL AS announced FROM revoked`,
      [isoOf(at), id, REVOCATIONS_CHANNEL],
    );
    const row = revoked[0] as (TokenRow & { announced?: boolean }) | undefined;
    if (!row) return undefined;
    delete row.announced;
    return row;
  }

  async page(afterId: string | undefined, limit: number): Promise<TokenRow[]> {
    return this.rows('SELECT * FROM "ApiToken" WHERE "id" > $1 ORDER BY "id" LIMIT $2', [afterId ?? '', limit]);
  }

  async watchRevocations(
    listener: (tokenId: string | undefined) => void,
    onError?: (error: Error) => void,
    connection?: { lost(): void; back(): void },
  ): Promise<{ stop(): Promise<void> }> {
    const notifier = new PgEventNotifier(this.url, listener, onError, connection?.back, REVOCATIONS_CHANNEL, connection?.lost);
    await notifier.start();
    return notifier;
  }
}
