import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/**
 * The folder holding rollplane's package.json: the checkout when running from `src/` (tsx), the package when running
 * from `dist/src/` (built, or installed from the tarball as the container image is). The files rollplane reads at run
 * time are found from it: schema.graphql, the migrations, the web UI, the version. Walks up from this module, so it
 * works wherever the package is (fileURLToPath, not URL.pathname, so that a space in the path is not read as %20).
 */
export function projectRoot(): string {
  if (found !== undefined) return found;
  const start = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; ) {
    if (isRollplanePackage(path.join(dir, 'package.json'))) {
      found = dir;
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find rollplane's package.json above ${start}`);
    dir = parent;
  }
}

/** A path under the project root (see projectRoot). */
export function projectPath(...segments: string[]): string {
  return path.join(projectRoot(), ...segments);
}

function isRollplanePackage(file: string): boolean {
  if (!existsSync(file)) return false;
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === 'rollplane';
  } catch {
    return false;
  }
}
