import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** rollplane's version from package.json (read once; works from src/ and dist/src/). */
export const VERSION: string = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    try {
      const pkg = JSON.parse(readFileSync(path.resolve(here, up, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'rollplane' && pkg.version) return pkg.version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0';
})();
