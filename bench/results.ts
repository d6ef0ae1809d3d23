import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** `bench/results/` of the repository, whether the benchmarks run from the sources or compiled (dist/bench). */
export const RESULTS_DIR = path.basename(path.dirname(HERE)) === 'dist' ? path.join(HERE, '..', '..', 'bench', 'results') : path.join(HERE, 'results');

/** Writes `bench/results/<name>.json`; returns its path. */
export function writeResult(name: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
