import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { describeWithPostgres, findPostgresBinaries, startPostgres } from '../helpers/postgres.js';

describe('findPostgresBinaries', () => {
  it('takes the first PATH folder that holds initdb, pg_ctl and postgres together', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rollplane pg bin '));
    try {
      const partial = path.join(root, 'partial');
      const complete = path.join(root, 'complete');
      for (const [dir, files] of [
        [partial, ['pg_ctl']],
        [complete, ['initdb', 'pg_ctl', 'postgres']],
      ] as const) {
        mkdirSync(dir);
        for (const file of files) {
          writeFileSync(path.join(dir, file), '#!/bin/sh\n');
          chmodSync(path.join(dir, file), 0o755);
        }
      }
      const found = findPostgresBinaries({ PATH: [partial, complete].join(path.delimiter) });
      expect(found).toEqual({ dir: complete, initdb: path.join(complete, 'initdb'), pgCtl: path.join(complete, 'pg_ctl') });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describeWithPostgres('the throwaway PostgreSQL server', (server) => {
  it('serves on 127.0.0.1 with fsync off and UTC, and makes empty databases', async () => {
    const url = await server().createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT current_setting('fsync') AS fsync, current_setting('TimeZone') AS tz, inet_server_addr()::text AS addr,
        (SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public') AS tables`);
      expect(rows[0]).toEqual({ fsync: 'off', tz: 'UTC', addr: '127.0.0.1/32', tables: 0 });
    } finally {
      await client.end();
    }
  });

  it('is gone with its files once stopped', async () => {
    const bin = findPostgresBinaries()!;
    const own = await startPostgres(bin);
    const { rows } = await own.admin<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`);
    const dataDir = rows[0]!.dir;
    expect(existsSync(dataDir)).toBe(true);
    await own.stop();
    expect(existsSync(dataDir)).toBe(false);
    const client = new pg.Client({ connectionString: own.adminUrl, connectionTimeoutMillis: 5_000 });
    await expect(client.connect()).rejects.toThrow(/ECONNREFUSED/);
  });
});
