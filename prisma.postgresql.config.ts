// Prisma CLI configuration for PostgreSQL (offline: JS engine + pg driver adapter with the work-arounds of
// prisma/cli/pgMigrationAdapter.ts). Choose it with `--config prisma.postgresql.config.ts`. `generate` and
// `validate` never connect; `migrate …` connect to DATABASE_URL (and create a throwaway shadow database).
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { pgMigrationAdapter } from './prisma/cli/pgMigrationAdapter.js';

const fromEnv = process.env.DATABASE_URL;
// Only a postgres URL will do here: a URL of the other provider makes the CLI fall back to a downloaded engine.
const url = fromEnv && /^postgres(ql)?:\/\//.test(fromEnv) ? fromEnv : 'postgresql://rollplane:rollplane@127.0.0.1:5432/rollplane';
process.env.DATABASE_URL = url;

export default defineConfig({
  schema: path.join('prisma', 'postgresql'),
  migrations: { path: path.join('prisma', 'postgresql', 'migrations') },
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    return pgMigrationAdapter(url);
  },
});
