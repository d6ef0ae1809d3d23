import type { TokenRow, TokenStore } from '../../auth/TokenStore.js';
import { dateOf, dateOrNull, sqlDate, type Sql } from '../Sql.js';
import type { Raw } from '../rolloutRows.js';

const rowOf = (raw: Raw<TokenRow>): TokenRow => ({
  ...raw,
  createdAt: dateOf(raw.createdAt),
  expiresAt: dateOrNull(raw.expiresAt),
  revokedAt: dateOrNull(raw.revokedAt),
  lastUsedAt: dateOrNull(raw.lastUsedAt),
});

/**
 * API tokens on SQLite, on rollplane's prepared-statement connection (authentication reads one row per request: about
 * 40 µs). Writes go through Sql.transaction, which waits out another connection's lock. One process, so a revocation needs no announcement: TokenService closes the sockets itself.
 */
export class SqliteTokenStore implements TokenStore {
  constructor(private readonly sql: Sql) {}

  private one(text: string, ...params: (string | number | null)[]): TokenRow | undefined {
    const raw = this.sql.get<Raw<TokenRow>>(text, ...params);
    return raw ? rowOf(raw) : undefined;
  }

  async insert(row: Omit<TokenRow, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRow | undefined> {
    return this.sql.transaction((sql) => {
      const raw = sql.get<Raw<TokenRow>>(
        'INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt", "expiresAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING *',
        row.id,
        row.name,
        row.role,
        row.hash,
        sqlDate(row.createdAt),
        row.expiresAt ? sqlDate(row.expiresAt) : null,
      );
      return raw ? rowOf(raw) : undefined;
    });
  }

  async findById(id: string) {
    return this.one('SELECT * FROM "ApiToken" WHERE "id" = ?', id);
  }

  async findByName(name: string) {
    return this.one('SELECT * FROM "ApiToken" WHERE "name" = ?', name);
  }

  async findByHash(hash: string) {
    return this.one('SELECT * FROM "ApiToken" WHERE "hash" = ?', hash);
  }

  async count(): Promise<number> {
    return this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM "ApiToken"')!.n;
  }

  async reissue(id: string, change: { hash: string; role: string }): Promise<void> {
    await this.sql.transaction((sql) =>
      sql.run('UPDATE "ApiToken" SET "hash" = ?, "role" = ?, "revokedAt" = NULL, "expiresAt" = NULL WHERE "id" = ?', change.hash, change.role, id),
    );
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.sql.transaction((sql) => sql.run('UPDATE "ApiToken" SET "lastUsedAt" = ? WHERE "id" = ?', sqlDate(at), id));
  }

  async revoke(id: string, at: Date): Promise<TokenRow | undefined> {
    return this.sql.transaction((sql) => {
      sql.run('UPDATE "ApiToken" SET "revokedAt" = COALESCE("revokedAt", ?) WHERE "id" = ?', sqlDate(at), id);
      const raw = sql.get<Raw<TokenRow>>('SELECT * FROM "ApiToken" WHERE "id" = ?', id);
      return raw ? rowOf(raw) : undefined;
    });
  }

  async page(afterId: string | undefined, limit: number): Promise<TokenRow[]> {
    return this.sql.all<Raw<TokenRow>>('SELECT * FROM "ApiToken" WHERE "id" > ? ORDER BY "id" LIMIT ?', afterId ?? '', limit).map(rowOf);
  }

  async watchRevocations(): Promise<{ stop(): Promise<void> }> {
    return { stop: async () => {} };
  }
}
