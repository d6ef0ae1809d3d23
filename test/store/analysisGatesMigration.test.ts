import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/store/migrate.js';
import { applyPgMigrations } from '../../src/store/postgres/migrate.js';
import { migrationsCopy } from '../helpers/migrations.js';
import { describeWithPostgres } from '../helpers/postgres.js';

/**
 * Migration 20261210120000_analysis_gates (ADR 0067): runs name their gate and attempt, measurements their number per
 * metric. Measurements written before it are numbered in the order taken, per run and metric, and none is lost: the
 * columns are added in place on SQLite, never by Prisma's table rebuild, which would cascade from AnalysisRun into its
 * measurements (ADR 0046).
 */
const MIGRATION = '20261210120000_analysis_gates';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis gates migration '));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const measurement = (metric: string, value: number) =>
  `INSERT INTO "AnalysisMeasurement" ("runId", "metricName", "query", "result", "verdict", "startedAt", "finishedAt") VALUES ('run-1', '${metric}', 'q', '[${value}]', 'SUCCESSFUL', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`;

/** What the previous release wrote: one run, measurements of two metrics interleaved. */
const SEED = [
  `INSERT INTO "AnalysisRun" ("id", "rolloutId", "template", "phase", "startedAt") VALUES ('run-1', 'ro_1', '{}', 'SUCCESSFUL', CURRENT_TIMESTAMP)`,
  measurement('errors', 0),
  measurement('leases', 10),
  measurement('errors', 1),
  measurement('errors', 2),
  measurement('leases', 11),
];

const CHECKS: { sql: string; rows: unknown[] }[] = [
  { sql: 'SELECT "id", "gateKey", "attempt" FROM "AnalysisRun"', rows: [{ id: 'run-1', gateKey: null, attempt: 1 }] },
  {
    sql: 'SELECT "metricName", "seq", "result" FROM "AnalysisMeasurement" ORDER BY "id"',
    rows: [
      { metricName: 'errors', seq: 0, result: '[0]' },
      { metricName: 'leases', seq: 0, result: '[10]' },
      { metricName: 'errors', seq: 1, result: '[1]' },
      { metricName: 'errors', seq: 2, result: '[2]' },
      { metricName: 'leases', seq: 1, result: '[11]' },
    ],
  },
];

/** A measurement number taken twice, and a gate's attempt recorded twice: refused. */
const DUPLICATES = [
  `INSERT INTO "AnalysisMeasurement" ("runId", "metricName", "seq", "query", "verdict", "startedAt", "finishedAt") VALUES ('run-1', 'errors', 2, 'q', 'SUCCESSFUL', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`,
];
const GATE_RUN = (id: string) =>
  `INSERT INTO "AnalysisRun" ("id", "rolloutId", "template", "phase", "startedAt", "gateKey", "attempt") VALUES ('${id}', 'ro_1', '{}', 'RUNNING', CURRENT_TIMESTAMP, 'after:canary', 1)`;

describe(`${MIGRATION} on SQLite`, () => {
  it('numbers the measurements taken before, loses none, and keeps one row per number and per attempt', () => {
    const db = new Sqlite(path.join(tmp, 'analysis-gates.db'));
    try {
      db.pragma('foreign_keys = ON');
      applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'before'));
      for (const statement of SEED) db.prepare(statement).run();
      expect(applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'this')).applied).toEqual([MIGRATION]);
      for (const { sql, rows } of CHECKS) expect(db.prepare(sql).all()).toEqual(rows);
      for (const statement of DUPLICATES) expect(() => db.prepare(statement).run()).toThrow(/UNIQUE/);
      db.prepare(GATE_RUN('gate-1')).run();
      expect(() => db.prepare(GATE_RUN('gate-2')).run()).toThrow(/UNIQUE/);
      expect(db.pragma('foreign_key_check')).toEqual([]);
      // Measurements still belong to their run.
      db.prepare(`DELETE FROM "AnalysisRun" WHERE "id" = 'run-1'`).run();
      expect(db.prepare('SELECT count(*) AS n FROM "AnalysisMeasurement"').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });
});

describeWithPostgres(`${MIGRATION} on PostgreSQL`, (server) => {
  it('numbers the measurements taken before, loses none, and keeps one row per number and per attempt', async () => {
    const client = new pg.Client({ connectionString: await server().createDatabase() });
    await client.connect();
    try {
      await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'before'));
      for (const statement of SEED) await client.query(statement);
      expect((await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'this'))).applied).toEqual([MIGRATION]);
      for (const { sql, rows } of CHECKS) expect((await client.query(sql)).rows).toEqual(rows);
      for (const statement of DUPLICATES) await expect(client.query(statement)).rejects.toThrow(/unique/);
      await client.query(GATE_RUN('gate-1'));
      await expect(client.query(GATE_RUN('gate-2'))).rejects.toThrow(/unique/);
    } finally {
      await client.end();
    }
  });
});
