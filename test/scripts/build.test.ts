import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBuildInfo, recordBuild, staleReason } from '../../scripts/build.mjs';
import { projectRoot } from '../helpers/child.js';

/** scripts/build.mjs (what `npm start` and `npm install` rebuild) and scripts/prepare.mjs (npm's prepare), on a scratch project. */

const run = promisify(execFile);
let dir: string;

async function write(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
  await writeFile(path.join(dir, file), text);
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rollplane-build-'));
  await write('package.json', JSON.stringify({ name: 'rollplane', version: '9.8.7' }));
  await write('schema.graphql', 'type Query { a: Int }');
  await write('src/main.ts', 'export {};');
  await write('src/store/generated/client.ts', '// the tests’ Prisma client');
  for (const output of ['dist/src/main.js', 'dist/src/rollplane.js', 'dist/ui/index.html']) await write(output, '');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('scripts/build.mjs', () => {
  it('calls dist/ current once a build is recorded, and stale when a source changes or an output is missing', async () => {
    expect(staleReason(dir)).toBe('no record of the last build');
    const info = recordBuild(dir);
    expect(info.version).toBe('9.8.7');
    expect(readBuildInfo(dir)).toEqual(info);
    expect(staleReason(dir)).toBeUndefined();

    // What the build does not read changes nothing.
    await write('src/store/generated/client.ts', '// regenerated');
    await write('README.md', 'docs');
    expect(staleReason(dir)).toBeUndefined();

    await write('src/main.ts', 'export const changed = 1;');
    expect(staleReason(dir)).toBe('sources changed since the last build');
    recordBuild(dir);
    await write('src/new.ts', 'export {};');
    expect(staleReason(dir)).toBe('sources changed since the last build');
    recordBuild(dir);
    await write('schema.graphql', 'type Query { b: Int }');
    expect(staleReason(dir)).toBe('sources changed since the last build');
    recordBuild(dir);
    await unlink(path.join(dir, 'dist/ui/index.html'));
    expect(staleReason(dir)).toBe('dist/ui/index.html is missing');
  });

  it('records the revision it is given (the image build), else the git commit it builds', async () => {
    await cp(path.join(projectRoot, 'scripts'), path.join(dir, 'scripts'), { recursive: true });
    const record = (env: Record<string, string> = {}) =>
      run(process.execPath, [path.join(dir, 'scripts/build.mjs'), '--record'], { env: { ...process.env, ...env } });
    await record({ ROLLPLANE_REVISION: 'abc123' });
    expect(readBuildInfo(dir)?.revision).toBe('abc123');

    const { ROLLPLANE_REVISION: _ignored, ...env } = process.env;
    const git = (...args: string[]) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
    await git('init', '-q');
    await git('add', '-A');
    await git('commit', '-q', '-m', 'scratch');
    const { stdout: head } = await git('rev-parse', 'HEAD');
    await run(process.execPath, [path.join(dir, 'scripts/build.mjs'), '--record'], { env });
    expect(readBuildInfo(dir)?.revision).toBe(head.trim());
  });
});

describe('scripts/prepare.mjs', () => {
  it('builds nothing and succeeds without the development dependencies (npm ci --omit=dev), saying so', async () => {
    await cp(path.join(projectRoot, 'scripts'), path.join(dir, 'scripts'), { recursive: true });
    const { stderr } = await run(process.execPath, [path.join(dir, 'scripts/prepare.mjs')], { cwd: dir });
    expect(stderr).toMatch(/development dependencies not installed \(typescript, vite, @graphql-codegen\/core, prisma\): skipping the build/);
    expect(stderr).toMatch(/dist\/ is not built/);
  });

  it('does nothing at all in the packed package (no sources: dist/ comes built)', async () => {
    await cp(path.join(projectRoot, 'scripts'), path.join(dir, 'scripts'), { recursive: true });
    await rm(path.join(dir, 'src'), { recursive: true });
    const { stdout, stderr } = await run(process.execPath, [path.join(dir, 'scripts/prepare.mjs')], { cwd: dir });
    expect(stdout + stderr).toBe('');
  });
});
