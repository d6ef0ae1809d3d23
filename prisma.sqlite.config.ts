// Prisma CLI configuration for SQLite: the offline recipe (JS engine + better-sqlite3 driver adapter), so `prisma
// migrate` and `prisma generate` never download an engine binary. Choose it with `--config prisma.sqlite.config.ts`
// (never `--schema`: the URL would then be checked against the wrong provider and the CLI would try a download).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { sqliteMigrationAdapter } from './prisma/cli/sqliteMigrationAdapter.js';

const fromEnv = process.env.DATABASE_URL;
// Only a file: URL will do here: a URL of the other provider makes the CLI fall back to a downloaded engine.
const url = fromEnv?.startsWith('file:') ? fromEnv : 'file:./data/rollplane.db';
process.env.DATABASE_URL = url;
// better-sqlite3 creates the file but not its folder (a fresh clone has no ./data).
mkdirSync(path.dirname(path.resolve(url.slice('file:'.length).split('?')[0]!)), { recursive: true });

export default defineConfig({
  schema: path.join('prisma', 'sqlite'),
  migrations: { path: path.join('prisma', 'sqlite', 'migrations') },
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    return sqliteMigrationAdapter(url);
  },
});
