import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { SQLITE_MIGRATIONS_TABLE } from '../../src/store/migrate.js';

/**
 * The better-sqlite3 adapter for the Prisma CLI only (never at run time). `prisma migrate dev` and
 * `migrate diff --from-migrations` replay every migration into a shadow database with `executeRaw`, which this adapter
 * runs through `prepare()`: better-sqlite3 rejects a multi-statement string there, and the CLI reports it as
 * `P3006 … External error id#0`. A parameterless `executeRaw` therefore goes to `executeScript` (better-sqlite3's
 * `exec`, several statements) instead.
 *
 * On a database without `_prisma_migrations` (a fresh file), `migrate dev` fails with `P1014 The underlying table for
 * model _prisma_migrations does not exist`: the engine expects "no such table" as a typed error that this adapter does
 * not produce. The table is created first, with the DDL rollplane's own runner uses (the same as Prisma's).
 */
type Connection = Awaited<ReturnType<PrismaBetterSQLite3['connect']>>;

function acceptingScripts(connection: Connection): Connection {
  const executeRaw = connection.executeRaw.bind(connection);
  connection.executeRaw = async (query) => {
    if (query.args.length > 0) return executeRaw(query);
    await connection.executeScript(query.sql);
    return 0;
  };
  return connection;
}

export function sqliteMigrationAdapter(url: string) {
  const factory = new PrismaBetterSQLite3({ url });
  return {
    provider: 'sqlite' as const,
    adapterName: '@prisma/adapter-better-sqlite3',
    async connect() {
      const connection = acceptingScripts(await factory.connect());
      await connection.executeScript(SQLITE_MIGRATIONS_TABLE);
      return connection;
    },
    connectToShadowDb: async () => acceptingScripts(await factory.connectToShadowDb()),
  };
}
