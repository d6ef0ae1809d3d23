import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEAVY_SUITES, isHeavy } from '../suites.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Every test file under test/, relative to the project root. */
function testFiles(dir = path.join(ROOT, 'test')): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testFiles(full));
    else if (entry.name.endsWith('.test.ts')) out.push(path.relative(ROOT, full).split(path.sep).join('/'));
  }
  return out;
}

/** The rigs only heavy suites may use: killing the service at a crash point, driving Chromium. */
const HEAVY_RIGS = [/helpers\/crashPoint\.js'/, /from '\.\/browser\.js'|ui\/browser\.js'/];

describe('the split of the tests between npm test and npm run test:heavy (ADR 43)', () => {
  const files = testFiles();

  it('finds the test files', () => {
    expect(files).toEqual(expect.arrayContaining(['test/architecture/testSuites.test.ts', 'test/kinds/agentPool/controller/crash.test.ts']));
  });

  it('lists only heavy entries that still name test files', () => {
    for (const entry of HEAVY_SUITES) {
      expect(existsSync(path.join(ROOT, entry)), entry).toBe(true);
      if (!entry.endsWith('/')) expect(statSync(path.join(ROOT, entry)).isFile(), entry).toBe(true);
      expect(
        files.some((file) => isHeavy(file) && (file === entry || file.startsWith(entry))),
        entry,
      ).toBe(true);
    }
  });

  it('keeps every file that kills the service or drives a browser out of npm test', () => {
    const light = files.filter((file) => !isHeavy(file) && HEAVY_RIGS.some((rig) => rig.test(readFileSync(path.join(ROOT, file), 'utf8'))));
    expect(light).toEqual([]);
  });

  it('runs the fast project in npm test, the heavy one in test:heavy, and both on CI', () => {
    const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.test).toBe('npm run lint && npm run typecheck && vitest run --project fast');
    expect(scripts['test:heavy']).toBe('vitest run --project heavy');
    const ci = readFileSync(path.join(ROOT, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^npm test$/m);
    expect(ci).toMatch(/^npm run test:heavy$/m);
  });
});
