import { afterAll, describe, expect, it } from 'vitest';
import type { TokenRow, TokenStore } from '../../src/auth/TokenStore.js';
import type { AuditStore } from '../../src/domain/AuditStore.js';
import { until } from '../helpers/until.js';

/**
 * The token and audit stores' contract (auth/TokenStore.ts, domain/AuditStore.ts), run against every store. `open`
 * gives stores on a fresh, migrated database; `connect` another replica's stores on the same database.
 */
export interface TokenAuditFactory {
  /** Whether revocations are announced to other replicas (PostgreSQL); SQLite runs one process. */
  announces: boolean;
  open(): Promise<{ tokens: TokenStore; audit: AuditStore; close(): Promise<void> }>;
  connect(): Promise<{ tokens: TokenStore; audit: AuditStore; close(): Promise<void> }>;
}

const T0 = new Date('2026-12-01T12:00:00.123Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const token = (id: string, extra: Partial<TokenRow> = {}) => ({
  id,
  name: id.replace('tok_', 'n-'),
  role: 'deployer',
  hash: `hash-${id}`,
  createdAt: T0,
  expiresAt: null,
  ...extra,
});

export function tokenAuditContract(factory: () => TokenAuditFactory): void {
  let opened: Awaited<ReturnType<TokenAuditFactory['open']>>;
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });
  const stores = async () => {
    if (!opened) {
      opened = await factory().open();
      closers.push(() => opened.close());
    }
    return opened;
  };

  describe('tokens', () => {
    it('inserts, finds by id, name and hash, refuses a taken name, and pages by id', async () => {
      const { tokens } = await stores();
      const row = await tokens.insert(token('tok_a', { expiresAt: at(60) }));
      expect(row).toEqual({ ...token('tok_a', { expiresAt: at(60) }), revokedAt: null, lastUsedAt: null });
      expect(await tokens.findById('tok_a')).toEqual(row);
      expect(await tokens.findByName('n-a')).toEqual(row);
      expect(await tokens.findByHash('hash-tok_a')).toEqual(row);
      expect(await tokens.findByHash('nope')).toBeUndefined();
      expect(await tokens.insert(token('tok_a2', { name: 'n-a' }))).toBeUndefined();
      expect(await tokens.findById('tok_a2')).toBeUndefined();
      await tokens.insert(token('tok_b'));
      await tokens.insert(token('tok_c'));
      expect(await tokens.count()).toBe(3);
      expect((await tokens.page(undefined, 2)).map((t) => t.id)).toEqual(['tok_a', 'tok_b']);
      expect((await tokens.page('tok_b', 2)).map((t) => t.id)).toEqual(['tok_c']);
    });

    it('touches, revokes once (the first time stays) and reissues', async () => {
      const { tokens } = await stores();
      await tokens.insert(token('tok_r'));
      await tokens.touch('tok_r', at(5));
      expect((await tokens.findById('tok_r'))!.lastUsedAt).toEqual(at(5));
      expect((await tokens.revoke('tok_r', at(10)))!.revokedAt).toEqual(at(10));
      expect((await tokens.revoke('tok_r', at(20)))!.revokedAt).toEqual(at(10));
      expect(await tokens.revoke('tok_missing', at(20))).toBeUndefined();
      await tokens.reissue('tok_r', { hash: 'hash-new', role: 'admin' });
      expect(await tokens.findById('tok_r')).toMatchObject({ hash: 'hash-new', role: 'admin', revokedAt: null, expiresAt: null });
    });

    it('tells another replica of a revocation at once, and never of one that did not happen', async () => {
      const f = factory();
      const { tokens } = await stores();
      const other = await f.connect();
      closers.push(() => other.close());
      const heard: (string | undefined)[] = [];
      const watch = await other.tokens.watchRevocations((id) => heard.push(id));
      closers.push(() => watch.stop());
      await tokens.insert(token('tok_x'));
      await tokens.revoke('tok_missing-2', at(1));
      await tokens.revoke('tok_x', at(1));
      // The other replica refuses the token at once: it reads the row, there is no cache to outlive the revocation.
      expect((await other.tokens.findByHash('hash-tok_x'))!.revokedAt).toEqual(at(1));
      if (!f.announces) {
        expect(heard.filter((id) => id !== undefined)).toEqual([]);
        return;
      }
      await until('the other replica to hear of the revocation', () => heard.includes('tok_x'));
      expect(heard.filter((id) => id !== undefined)).toEqual(['tok_x']);
    });
  });

  describe('audit', () => {
    it('appends, pages newest first, and prunes by age and by count', async () => {
      const { audit } = await stores();
      const entry = (operation: string) => ({
        actor: 'ci',
        role: 'deployer',
        operation,
        input: '{"a":1}',
        result: 'OK',
        message: null,
        sourceAddr: '127.0.0.1',
      });
      for (let i = 0; i < 5; i++) await audit.insert(entry(`op${i}`), at(i * 100));
      const all = await audit.page(undefined, 10);
      expect(all.map((e) => e.operation)).toEqual(['op4', 'op3', 'op2', 'op1', 'op0']);
      expect(all[0]).toMatchObject({ ...entry('op4'), createdAt: at(400) });
      expect((await audit.page(all[1]!.id, 2)).map((e) => e.operation)).toEqual(['op2', 'op1']);
      expect(await audit.deleteBefore(at(150))).toBe(2);
      expect(await audit.keepNewest(2)).toBe(1);
      expect((await audit.page(undefined, 10)).map((e) => e.operation)).toEqual(['op4', 'op3']);
      expect(await audit.keepNewest(5)).toBe(0);
    });
  });
}
