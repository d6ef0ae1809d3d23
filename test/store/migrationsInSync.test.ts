import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { applyPgMigrations } from '../../src/store/postgres/migrate.js';
import { projectRoot } from '../helpers/child.js';
import { describeWithPostgres } from '../helpers/postgres.js';

/**
 * The models are written once (prisma/models) and each provider has its own committed migrations. These tests fail
 * when either provider's migrations lag the models: `prisma migrate diff --from-migrations … --exit-code` replays the
 * committed migrations into a shadow database and compares the result with the models (exit 2 on a difference).
 * Offline: the CLI runs with the JS engine and the work-around adapters of prisma/cli.
 */

type Provider = 'sqlite' | 'postgresql';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollplane migrations '));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function prisma(args: string[], databaseUrl: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(projectRoot, 'node_modules/prisma/build/index.js'), ...args],
      { cwd: projectRoot, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

function diffAgainst(provider: Provider, schemaFolder: string, databaseUrl: string) {
  return prisma(
    [
      'migrate',
      'diff',
      '--from-migrations',
      path.join('prisma', provider, 'migrations'),
      '--to-schema-datamodel',
      schemaFolder,
      '--exit-code',
      '--config',
      `prisma.${provider}.config.ts`,
    ],
    databaseUrl,
  );
}

/** A copy of a provider's schema folder whose models have one column more than the committed migrations. */
function schemaAhead(provider: Provider): string {
  const folder = path.join(tmp, `${provider}-ahead`);
  mkdirSync(path.join(folder, 'models'), { recursive: true });
  cpSync(path.join(projectRoot, 'prisma', provider, 'datasource.prisma'), path.join(folder, 'datasource.prisma'));
  // Every model file (the models are a multi-file schema), one of them changed.
  cpSync(path.join(projectRoot, 'prisma/models'), path.join(folder, 'models'), { recursive: true });
  const models = readFileSync(path.join(projectRoot, 'prisma/models/history.prisma'), 'utf8');
  const changed = models.replace(/model WriteProbe \{\n/, 'model WriteProbe {\n  addedByTheTest String?\n');
  expect(changed).not.toBe(models);
  writeFileSync(path.join(folder, 'models', 'history.prisma'), changed);
  return folder;
}

describe('SQLite migrations', () => {
  it('are in step with the models, and the check fails when the models move ahead of them', async () => {
    const url = `file:${path.join(tmp, 'sqlite', 'cli.db')}`;
    const [inSync, ahead] = await Promise.all([diffAgainst('sqlite', 'prisma/sqlite', url), diffAgainst('sqlite', schemaAhead('sqlite'), url)]);
    expect(inSync.output).toContain('No difference detected');
    expect(inSync.code).toBe(0);
    expect(ahead.code).toBe(2);
  });
});

describeWithPostgres('PostgreSQL migrations', (server) => {
  it('are in step with the models, and the check fails when the models move ahead of them', async () => {
    const [a, b] = [await server().createDatabase(), await server().createDatabase()];
    const [inSync, ahead] = await Promise.all([diffAgainst('postgresql', 'prisma/postgresql', a), diffAgainst('postgresql', schemaAhead('postgresql'), b)]);
    expect(inSync.output).toContain('No difference detected');
    expect(inSync.code).toBe(0);
    expect(ahead.code).toBe(2);
    // The shadow database is a throwaway one, never the main database (adapter-pg's bug 2): nothing was created there.
    const client = new pg.Client({ connectionString: a });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`);
      expect(rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('are applied at start by one of several replicas starting at once, as Prisma records them', async () => {
    const url = await server().createDatabase();
    const clients = [0, 1, 2].map(() => new pg.Client({ connectionString: url }));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      const reports = await Promise.all(clients.map((c) => applyPgMigrations(c)));
      const applied = reports.map((r) => r.applied.length).sort();
      const total = reports[0]!.total;
      expect(total).toBeGreaterThan(0);
      expect(applied).toEqual([0, 0, total]);
      const { rows } = await clients[0]!.query('SELECT count(*)::int AS n FROM "_prisma_migrations" WHERE finished_at IS NOT NULL');
      expect(rows[0].n).toBe(total);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    // Prisma's CLI reads rollplane's bookkeeping as its own.
    const status = await prisma(['migrate', 'status', '--config', 'prisma.postgresql.config.ts'], url);
    expect(status.output).toContain('Database schema is up to date');
    expect(status.code).toBe(0);
  });
});
