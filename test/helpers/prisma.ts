import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaClient } from '../../src/store/generated/client.js';

/**
 * Prisma on a test's SQLite file, for assertions and set-ups the API does not offer (count the audit rows, expire a
 * token, edit a rollout by hand). The service itself does not open Prisma: its stores use SQL (ADR 0009); Prisma keeps
 * the schema and writes the migrations. Its connection waits on the service's locks as any other writer would.
 */
export async function openTestPrisma(file: string): Promise<PrismaClient> {
  const prisma = new PrismaClient({ adapter: new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 5_000 }) });
  await prisma.$connect();
  return prisma;
}
