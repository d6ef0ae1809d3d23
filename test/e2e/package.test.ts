import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../helpers/child.js';

/**
 * The package `npm pack` makes (what CI runners and the container image install): what it holds, that everything
 * dist/ loads at run time is a production dependency, and that the unpacked package runs the CLI and the service.
 * `npm ci --omit=dev` of the unpacked package is what the image build runs (.ci/image-check).
 */

const run = promisify(execFile);
let dir: string;
let unpacked: string;
let files: string[];
let pkg: {
  version: string;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rollplane-pack-'));
  // The tarball is packed from dist/: bring it up to date first (a no-op right after `npm ci`, which built it).
  await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: projectRoot, timeout: 240_000 });
  // Without `prepare` (the Prisma client the tests use is not the package's business; dist/ is current).
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: projectRoot, timeout: 120_000 });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  files = packed!.files.map((f) => f.path);
  unpacked = path.join(dir, 'package');
  await run('tar', ['-xzf', path.join(dir, packed!.filename), '-C', dir]);
  pkg = JSON.parse(await readFile(path.join(unpacked, 'package.json'), 'utf8'));
  // The unpacked package finds its dependencies as an installed one would (here: the project's own node_modules).
  await symlink(path.join(projectRoot, 'node_modules'), path.join(unpacked, 'node_modules'), 'dir');
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The package names dist/src's JavaScript imports (static and dynamic), Node's built-ins left out. */
async function importedPackages(folder: string): Promise<Set<string>> {
  const names = new Set<string>();
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const text = await readFile(path.join(entry.parentPath, entry.name), 'utf8');
    for (const match of text.matchAll(/(?:^|[;\s])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
      const specifier = match[1] ?? match[2]!;
      if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
      const parts = specifier.split('/');
      names.add(specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
    }
  }
  return names;
}

describe('the npm package (npm pack)', () => {
  it('holds the built CLI, service, web UI, migrations and schema, and no sources or tests', () => {
    for (const file of [
      'bin/rollplane.js',
      'dist/src/main.js',
      'dist/src/rollplane.js',
      'dist/ui/index.html',
      'dist/build-info.json',
      'schema.graphql',
      'CHANGELOG.md',
      'README.md',
    ]) {
      expect(files, file).toContain(file);
    }
    expect(files.some((f) => f.startsWith('prisma/sqlite/migrations/') && f.endsWith('migration.sql'))).toBe(true);
    expect(files.some((f) => f.startsWith('prisma/postgresql/migrations/') && f.endsWith('migration.sql'))).toBe(true);
    expect(files.filter((f) => /^(src|test|bench|node_modules|data)\//.test(f) || f.startsWith('dist/src/store/generated'))).toEqual([]);
    expect(pkg.bin).toEqual({ rollplane: 'bin/rollplane.js' });
  });

  it('installs where it is used with production dependencies only, each of them for Node.js 20 (npm install --omit=dev, dry run)', async () => {
    // A tarball is installed without this project's lockfile: ranges resolve afresh. @graphql-tools/schema's range
    // for @graphql-tools/merge then took 9.2, whose @graphql-tools/utils 12 brings @whatwg-node/promise-helpers 2,
    // which wants Node.js 22 (EBADENGINE); the package pins merge as the lockfile does.
    const consumer = path.join(dir, 'consumer');
    await mkdir(consumer);
    await writeFile(path.join(consumer, 'package.json'), '{"name": "consumer", "private": true}');
    const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'))!;
    const install = await run('npm', ['install', '--omit=dev', '--dry-run', '--no-audit', '--no-fund', path.join(dir, tarball)], {
      cwd: consumer,
      timeout: 240_000,
    });
    expect(install.stderr).not.toContain('EBADENGINE');
    expect(install.stdout).toMatch(/added \d+ packages/);
  }, 300_000);

  it('needs only its production dependencies: whatever dist/ imports is one, and installing it runs no build', async () => {
    const imported = await importedPackages(path.join(unpacked, 'dist/src'));
    expect(imported.size).toBeGreaterThan(10);
    // pino loads its pretty printer by name (a transport), not by an import.
    imported.add('pino-pretty');
    // Type-only packages leave nothing in the JavaScript; anything left must be installed with --omit=dev.
    expect([...imported].filter((name) => !(name in pkg.dependencies)).sort()).toEqual([]);
    // npm runs a tarball's install scripts where it is installed: none may need the build tools.
    for (const script of ['preinstall', 'install', 'postinstall']) expect(pkg.scripts[script], script).toBeUndefined();
    for (const tool of ['typescript', 'vite', 'prisma', '@graphql-codegen/core']) expect(pkg.dependencies[tool], tool).toBeUndefined();
  });

  it('runs the CLI and the service from the unpacked package', async () => {
    const { stdout: version } = await run(process.execPath, [path.join(unpacked, 'bin/rollplane.js'), '--version']);
    expect(version.trim()).toBe(pkg.version);

    const child = spawn(process.execPath, [path.join(unpacked, 'bin/rollplane.js'), 'serve', '--port', '0', '--kube', 'sim', '--sim-fleet', 'empty'], {
      cwd: dir,
      env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', DATABASE_URL: `file:${path.join(dir, 'history.db')}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (chunk) => {
          out += chunk;
          const match = /rollplane listening on (\S+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
      });
      const base = url.replace(/\/graphql$/, '');
      const page = await fetch(`${base}/`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="root"');
      const answer = (await (
        await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ serverInfo { version } }' }) })
      ).json()) as { data: { serverInfo: { version: string } } };
      expect(answer.data.serverInfo.version).toBe(pkg.version);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
