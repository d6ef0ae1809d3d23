import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * rollplane's version (package.json) and the source revision it was built from (dist/build-info.json, written by
 * `npm run build` from git or, in the container image, from the REVISION build argument). `rollplane --version`, the
 * `rollplane_build_info` metric and the image's OCI labels all come from these. Read once; works from src/ and dist/src/.
 */
function packageRoot(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    try {
      const pkg = JSON.parse(readFileSync(path.resolve(here, up, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'rollplane') return path.resolve(here, up);
    } catch {
      // try the next location
    }
  }
  return undefined;
}

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const root = packageRoot();
const pkg = root ? readJson(path.join(root, 'package.json')) : undefined;
const build = root ? readJson(path.join(root, 'dist', 'build-info.json')) : undefined;

export const VERSION: string = typeof pkg?.version === 'string' ? pkg.version : '0.0.0';
/** The git commit dist/ was built from, or "unknown" (no build record, or built outside a git checkout). */
export const REVISION: string = typeof build?.revision === 'string' ? build.revision : 'unknown';
