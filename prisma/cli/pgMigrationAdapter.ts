import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';

/**
 * The pg adapter for the Prisma CLI only (the service does not open Prisma at run time, ADR 0028). @prisma/adapter-pg 6.19.3 breaks every
 * migrate command in three ways (research/postgres-spike.md §2); this factory works around each:
 * 1. the WASM schema engine reads catalog columns of type `name`/`"char"` that the adapter cannot map
 *    (prisma/orm#27403): the pool reports them as text;
 * 2. given a connectionString, the adapter's shadow database is the main database (pg lets the string's database win
 *    over the shadow's name), so `migrate diff --from-migrations` would write the history into the dev database: the
 *    pool gets discrete fields, and the shadow database is created and dropped here;
 * 3. the adapter splits a migration on every `;` and runs the pieces outside a transaction: a migration is sent whole,
 *    as one simple-protocol query (one implicit transaction, `$$` bodies intact).
 */
const TEXT_OID = 25;
const NAME_OID = 19;
const CHAR_OID = 18;

interface QueryResultLike {
  fields?: { dataTypeID: number }[];
}

function catalogTypesAsText<T>(result: T): T {
  if (Array.isArray(result)) return result.map(catalogTypesAsText) as T;
  for (const field of (result as QueryResultLike | null)?.fields ?? []) {
    if (field.dataTypeID === NAME_OID || field.dataTypeID === CHAR_OID) field.dataTypeID = TEXT_OID;
  }
  return result;
}

class CatalogSafePool extends pg.Pool {
  // One override for all of Pool.query's overloads; the adapter uses the promise form only.
  override query(...args: unknown[]): never {
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    return (result instanceof Promise ? result.then(catalogTypesAsText) : result) as never;
  }
}

/** postgresql://user:pass@host:port/db?… → discrete pool fields (never a connectionString: bug 2). */
export function poolFieldsOf(url: string): pg.PoolConfig {
  const u = new URL(url);
  return {
    host: decodeURIComponent(u.hostname),
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)),
    // The CLI waits for idle connections to close before it exits.
    idleTimeoutMillis: 100,
  };
}

type Connection = Awaited<ReturnType<PrismaPg['connect']>>;

function wholeScripts(connection: Connection): Connection {
  connection.executeScript = async (script: string) => {
    await (connection.underlyingDriver() as pg.Pool).query(script);
  };
  return connection;
}

export function pgMigrationAdapter(url: string) {
  const fields = poolFieldsOf(url);
  const main = new PrismaPg(new CatalogSafePool(fields), { disposeExternalPool: true });
  return {
    provider: 'postgres' as const,
    adapterName: '@prisma/adapter-pg',
    connect: async () => wholeScripts(await main.connect()),
    async connectToShadowDb() {
      const admin = new pg.Client(fields);
      await admin.connect();
      const name = `prisma_shadow_${randomUUID().replaceAll('-', '')}`;
      await admin.query(`CREATE DATABASE "${name}"`);
      const shadow = wholeScripts(await new PrismaPg(new CatalogSafePool({ ...fields, database: name }), { disposeExternalPool: true }).connect());
      const dispose = shadow.dispose.bind(shadow);
      shadow.dispose = async () => {
        await dispose();
        await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
        await admin.end();
      };
      return shadow;
    },
  };
}
