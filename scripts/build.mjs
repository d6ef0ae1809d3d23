// The build's bookkeeping: what it was built from, so that `npm start` and `npm install` rebuild only when a source
// changed (a full build takes 20-30 s; checking takes a fraction of a second), and the revision it reports.
//
//   node scripts/build.mjs --record     after a build: write dist/build-info.json (version, revision, inputs digest)
//   node scripts/build.mjs --if-stale   run `npm run build` unless dist/ was built from the sources as they are now
//
// The revision is ROLLPLANE_REVISION when set (the image build passes it), else `git rev-parse HEAD`, else "unknown".
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BUILD_INFO = path.join('dist', 'build-info.json');

/** Files and folders whose content the build reads (folders recursively). */
const INPUTS = ['package.json', 'package-lock.json', 'schema.graphql', 'tsconfig.json', 'tsconfig.build.json', 'scripts/codegen.mjs', 'src'];
/** Under src/, what the build does not read: the Prisma clients the tests generate. */
const IGNORED = new Set(['src/store/generated', 'src/store/generated-pg']);
/** What the build must have produced for dist/ to be usable at all. */
const OUTPUTS = ['dist/src/main.js', 'dist/src/rollplane.js', 'dist/ui/index.html'];

function listFiles(base, rel) {
  const files = [];
  for (const entry of readdirSync(path.join(base, rel), { withFileTypes: true })) {
    const child = `${rel}/${entry.name}`;
    if (IGNORED.has(child)) continue;
    if (entry.isDirectory()) files.push(...listFiles(base, child));
    else if (entry.isFile()) files.push(child);
  }
  return files;
}

/** SHA-256 over the path and content of every input file, in a fixed order. */
export function inputsDigest(base = root) {
  const hash = createHash('sha256');
  const files = [];
  for (const input of INPUTS) {
    const full = path.join(base, input);
    if (!existsSync(full)) continue;
    if (statSync(full).isDirectory()) files.push(...listFiles(base, input));
    else files.push(input);
  }
  for (const file of files.sort()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(base, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The recorded build of `base`, if any. */
export function readBuildInfo(base = root) {
  try {
    return JSON.parse(readFileSync(path.join(base, BUILD_INFO), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Why dist/ must be rebuilt, or undefined when it was built from the sources as they are. */
export function staleReason(base = root) {
  const missing = OUTPUTS.find((file) => !existsSync(path.join(base, file)));
  if (missing) return `${missing} is missing`;
  const info = readBuildInfo(base);
  if (!info?.inputs) return 'no record of the last build';
  if (info.inputs !== inputsDigest(base)) return 'sources changed since the last build';
  return undefined;
}

function revision(base) {
  if (process.env.ROLLPLANE_REVISION) return process.env.ROLLPLANE_REVISION;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: base, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

export function recordBuild(base = root) {
  const { version } = JSON.parse(readFileSync(path.join(base, 'package.json'), 'utf8'));
  const info = { version, revision: revision(base), inputs: inputsDigest(base) };
  writeFileSync(path.join(base, BUILD_INFO), `${JSON.stringify(info, null, 2)}\n`);
  return info;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--record')) {
    recordBuild();
  } else if (process.argv.includes('--if-stale')) {
    const reason = staleReason();
    if (reason) {
      process.stderr.write(`rollplane: building (${reason})\n`);
      const npm = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
      process.exit(npm.status ?? 1);
    }
  } else {
    process.stderr.write('usage: node scripts/build.mjs --record | --if-stale\n');
    process.exit(2);
  }
}
