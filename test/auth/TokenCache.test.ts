import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKEN_CACHE_TTL_MS } from '../../src/auth/TokenCache.js';
import { TokenService } from '../../src/auth/TokenService.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';

/**
 * On PostgreSQL authentication reads a token once per second at most per replica (issue 17: it was one round trip
 * per request), and a revocation still refuses the token's next request: at once on the revoking replica and on one
 * that hears the announcement, within the TTL on one that missed it. A real SQLite token store, its look-ups counted;
 * the clock is driven by the test.
 */
describe('TokenService token look-ups', () => {
  let dir: string;
  let db: SqliteDatabase;
  let now: number;
  let lookups: number;
  let service: TokenService;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-token-cache-'));
    db = await openSqliteDatabase(`file:${path.join(dir, 't.db')}`);
    now = Date.UTC(2026, 11, 1, 8, 0, 0);
    lookups = 0;
    const findByHash = db.tokens.findByHash.bind(db.tokens);
    db.tokens.findByHash = (hash) => {
      lookups++;
      return findByHash(hash);
    };
    // As the composition root sets it up for PostgreSQL (the token store itself is SQLite's: the cache is the same).
    service = new TokenService(db.tokens, () => now, TOKEN_CACHE_TTL_MS);
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const refused = (header: string) =>
    service.authenticate(header).then(
      () => false,
      (error: { code?: string }) => error.code === 'UNAUTHENTICATED',
    );

  it('reads a token once for the requests within the TTL, then again', async () => {
    const { secret } = await service.create({ name: 'ci', role: 'deployer' });
    const header = `Bearer ${secret}`;
    for (let i = 0; i < 5; i++) expect(await service.authenticate(header)).toMatchObject({ kind: 'token', name: 'ci' });
    expect(lookups).toBe(1);
    now += TOKEN_CACHE_TTL_MS;
    await service.authenticate(header);
    expect(lookups).toBe(2);
  });

  it('looks an unknown secret up every time', async () => {
    for (let i = 0; i < 3; i++) expect(await refused('Bearer rp_nobody')).toBe(true);
    expect(lookups).toBe(3);
  });

  it('refuses a token revoked on this replica at its next request', async () => {
    const { token, secret } = await service.create({ name: 'ci', role: 'deployer' });
    await service.authenticate(`Bearer ${secret}`);
    await service.revoke(token.id);
    expect(await refused(`Bearer ${secret}`)).toBe(true);
  });

  it('refuses a token revoked on another replica as soon as the announcement arrives, and within the TTL without one', async () => {
    const { token, secret } = await service.create({ name: 'ci', role: 'deployer' });
    const other = await service.create({ name: 'other', role: 'viewer' });
    await service.authenticate(`Bearer ${secret}`);
    await service.authenticate(`Bearer ${other.secret}`);
    // Another replica revokes both: the store changes behind this service's back.
    await db.tokens.revoke(token.id, new Date(now));
    await db.tokens.revoke(other.token.id, new Date(now));
    service.revokedElsewhere(token.id);
    expect(await refused(`Bearer ${secret}`)).toBe(true);
    // The other announcement was lost: the cached row answers until the TTL has passed, never longer.
    expect(await refused(`Bearer ${other.secret}`)).toBe(false);
    now += TOKEN_CACHE_TTL_MS;
    expect(await refused(`Bearer ${other.secret}`)).toBe(true);
  });

  it('does not keep what a look-up under way read when a revocation is announced meanwhile', async () => {
    const { token, secret } = await service.create({ name: 'ci', role: 'deployer' });
    const findByHash = db.tokens.findByHash;
    // The announcement lands while the look-up is on its way (after the store answered with the unrevoked row).
    db.tokens.findByHash = async (hash) => {
      const row = await findByHash(hash);
      await db.tokens.revoke(token.id, new Date(now));
      service.revokedElsewhere(token.id);
      return row;
    };
    await service.authenticate(`Bearer ${secret}`);
    db.tokens.findByHash = findByHash;
    expect(await refused(`Bearer ${secret}`)).toBe(true);
  });

  it('forgets every token when the announcements may have been missed (recheck)', async () => {
    const { token, secret } = await service.create({ name: 'ci', role: 'deployer' });
    await service.authenticate(`Bearer ${secret}`);
    await db.tokens.revoke(token.id, new Date(now));
    await service.recheck([]);
    expect(await refused(`Bearer ${secret}`)).toBe(true);
  });

  it('reads the token on every request without a TTL (SQLite)', async () => {
    const uncached = new TokenService(db.tokens, () => now);
    const { token, secret } = await uncached.create({ name: 'ci', role: 'deployer' });
    await uncached.authenticate(`Bearer ${secret}`);
    await uncached.authenticate(`Bearer ${secret}`);
    expect(lookups).toBe(2);
    await db.tokens.revoke(token.id, new Date(now));
    expect(await uncached.authenticate(`Bearer ${secret}`).catch((error: { code?: string }) => error.code)).toBe('UNAUTHENTICATED');
  });

  it('reads the token on every request while announcements cannot arrive, and caches again once they can', async () => {
    const { token, secret } = await service.create({ name: 'ci', role: 'deployer' });
    await service.authenticate(`Bearer ${secret}`);
    service.announcementsLost();
    await service.authenticate(`Bearer ${secret}`);
    await service.authenticate(`Bearer ${secret}`);
    expect(lookups).toBe(3);
    await db.tokens.revoke(token.id, new Date(now));
    expect(await refused(`Bearer ${secret}`)).toBe(true);
    service.announcementsBack();
    const other = await service.create({ name: 'other', role: 'viewer' });
    await service.authenticate(`Bearer ${other.secret}`);
    await service.authenticate(`Bearer ${other.secret}`);
    expect(lookups).toBe(5);
  });

  it('refuses an expired token from its cached row', async () => {
    const { secret } = await service.create({ name: 'ci', role: 'deployer', expiresInSeconds: 60 });
    await service.authenticate(`Bearer ${secret}`);
    now += 60_000;
    expect(await refused(`Bearer ${secret}`)).toBe(true);
  });
});
