import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../helpers/child.js';
import { until } from '../helpers/until.js';

/**
 * Issue 16, item 8: a checkout whose path holds a space. rollplane's own files (sources, migrations, schema) are copied
 * under a folder named with a space, so every path they compute from `import.meta.url` has one; node_modules is only
 * linked (Node resolves packages through the link to their real folder, so the copy would prove nothing more).
 */
describe('a checkout under a path with a space', () => {
  let root: string;

  beforeAll(() => {
    root = path.join(mkdtempSync(path.join(os.tmpdir(), 'rollplane-space-')), 'my checkout');
    for (const entry of ['src', 'prisma', 'schema.graphql', 'package.json', 'tsconfig.json']) {
      cpSync(path.join(projectRoot, entry), path.join(root, entry), { recursive: true });
    }
    symlinkSync(path.join(projectRoot, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  });
  afterAll(() => rmSync(path.dirname(root), { recursive: true, force: true }));

  it('finds and applies every migration, serves GraphQL, and stops cleanly', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src', 'main.ts')], {
      cwd: root,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        // Relative to the working directory, so the database file's path has the space too (and one of its own).
        DATABASE_URL: 'file:./data/history store.db',
        PORT: '0',
        ROLLPLANE_KUBE: 'sim',
        ROLLPLANE_SIM_FLEET: 'empty',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const url = await until('the server listening', () => /rollplane listening on (\S+)/.exec(out)?.[1] ?? (child.exitCode !== null && `exited:${err}`));
      expect(url, `the server exited before listening:\n${out}\n${err}`).toMatch(/^http:/);

      const migrated = out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; applied?: string[]; database?: string })
        .find((entry) => entry.msg === 'database migrated');
      const committed = readdirSync(path.join(root, 'prisma', 'sqlite', 'migrations'), { withFileTypes: true }).filter((e) => e.isDirectory());
      expect(migrated?.applied).toHaveLength(committed.length);
      expect(path.resolve(root, migrated?.database ?? '')).toBe(path.join(root, 'data', 'history store.db'));

      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ serverInfo { version kubeMode } }' }),
      });
      expect(await response.json()).toMatchObject({ data: { serverInfo: { kubeMode: 'sim' } } });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
