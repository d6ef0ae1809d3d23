import { readFileSync } from 'node:fs';
import { projectPath } from './util/projectRoot.js';

/**
 * rollplane's version (package.json) and the source revision it was built from (dist/build-info.json, written by
 * `npm run build` from git or, in the container image, from the REVISION build argument). `rollplane --version`, the
 * `rollplane_build_info` metric and the image's OCI labels all come from these. Read once, from the project root
 * (util/projectRoot.ts); a copy with no project around it (a bundle elsewhere) reads as version 0.0.0.
 */
function readJson(...segments: string[]): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(projectPath(...segments), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const pkg = readJson('package.json');
const build = readJson('dist', 'build-info.json');

export const VERSION: string = typeof pkg?.version === 'string' ? pkg.version : '0.0.0';
/** The git commit dist/ was built from, or "unknown" (no build record, or built outside a git checkout). */
export const REVISION: string = typeof build?.revision === 'string' ? build.revision : 'unknown';
