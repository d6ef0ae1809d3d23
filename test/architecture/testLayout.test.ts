import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TEST = path.join(ROOT, 'test');

/**
 * Top-level test folders that mirror nothing on purpose: end-to-end scenarios through the real server, shared rigs,
 * these architecture checks.
 */
const OWN_PLACES = new Set(['e2e', 'helpers', 'architecture']);
/** Test folders that mirror a project folder outside src/ (deploy/: the manifests and permissions.ts; scripts/: build and packaging). */
const OUTSIDE_SRC = new Set(['deploy', 'scripts']);

/** Every folder under test/, relative to it (fixtures folders hold data for the tests beside them, not tests). */
function testFolders(dir = TEST, rel = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === 'fixtures') continue;
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (!rel && OWN_PLACES.has(entry.name)) continue;
    out.push(child, ...testFolders(path.join(dir, entry.name), child));
  }
  return out;
}

function isFolder(p: string): boolean {
  try {
    return readdirSync(p) !== undefined;
  } catch {
    return false;
  }
}

function counterpart(folder: string): string {
  const top = folder.split('/')[0];
  return OUTSIDE_SRC.has(top) ? path.join(ROOT, folder) : path.join(ROOT, 'src', folder);
}

describe('the test tree mirrors src/', () => {
  it('finds the folders it checks', () => {
    // Guards the walk itself: a broken walk would find nothing and the next test would pass vacuously.
    expect(testFolders()).toEqual(expect.arrayContaining(['kinds/agentPool/controller', 'sim/behaviour/upstream', 'store']));
  });

  it('has no test folder without a counterpart (end-to-end scenarios go in test/e2e, shared rigs in test/helpers)', () => {
    const orphans = testFolders().filter((folder) => !isFolder(counterpart(folder)));
    expect(orphans).toEqual([]);
  });
});
