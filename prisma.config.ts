// Prisma CLI configuration: the offline recipe (JS engine + better-sqlite3 driver adapter), so `prisma migrate`
// and `prisma generate` never download an engine binary.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';

const url = process.env.DATABASE_URL ?? 'file:./data/rollplane.db';
process.env.DATABASE_URL = url;

export default defineConfig({
  schema: path.join('prisma', 'schema.prisma'),
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    return new PrismaBetterSQLite3({ url });
  },
});
