import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Where the rollout kinds' modules live: one folder each under it, registered through its `module.ts`. */
export const KINDS_FOLDER = 'kinds';
/** The one file outside the kinds' folders that may name them: the list of registered kinds, through `module.ts`. */
const REGISTRY = path.join(KINDS_FOLDER, 'index.ts');
const REGISTRATION = 'module.ts';

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'generated' || entry.name === 'node_modules') continue;
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The kinds' folders under `srcDir` (relative to it, e.g. `kinds/agentPool`). */
export function kindFolders(srcDir: string): string[] {
  return fs
    .readdirSync(path.join(srcDir, KINDS_FOLDER), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(KINDS_FOLDER, e.name));
}

/**
 * Imports (type-only ones too) that reach into a kind's folder from outside it: from another kind, from the rest of
 * src, or from the registry to anything but the kind's `module.ts`. Each as `importer → imported`, relative to srcDir.
 */
export function kindBoundaryViolations(srcDir: string): string[] {
  const kinds = kindFolders(srcDir);
  const kindOf = (rel: string) => kinds.find((k) => rel.startsWith(k + path.sep));
  const found: string[] = [];
  for (const file of sourceFiles(srcDir)) {
    const from = path.relative(srcDir, file);
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = path.relative(srcDir, path.resolve(path.dirname(file), fileName.replace(/\.(m?js)$/, '.ts')));
      const kind = kindOf(to);
      if (!kind || kindOf(from) === kind) continue;
      if (from === REGISTRY && to === path.join(kind, REGISTRATION)) continue;
      found.push(`${from} → ${to}`);
    }
  }
  return found.sort();
}

/** Kind folders the registry does not register (through their `module.ts`). */
export function unregisteredKinds(srcDir: string): string[] {
  const registry = fs.readFileSync(path.join(srcDir, REGISTRY), 'utf8');
  return kindFolders(srcDir).filter((k) => !registry.includes(`'./${path.basename(k)}/module.js'`));
}
