// npm's `prepare`: `npm install` / `npm ci` in a clone, and `npm pack`. Generates the Prisma client the tests read
// through and builds dist/ unless it is current. Never run where the packed tarball is installed (it holds dist/).
// With production dependencies only (`npm ci --omit=dev`), the build tools are absent: say so and build nothing.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { root, staleReason } from './build.mjs';

// The packed package (no sources, dist/ built): `npm ci` inside it, as the container image's build does, builds nothing.
if (!existsSync(path.join(root, 'src'))) process.exit(0);

const require = createRequire(path.join(root, 'package.json'));
const BUILD_TOOLS = ['typescript', 'vite', '@graphql-codegen/core', 'prisma'];
const missing = BUILD_TOOLS.filter((name) => {
  try {
    require.resolve(`${name}/package.json`);
    return false;
  } catch {
    return true;
  }
});

if (missing.length > 0) {
  const built = staleReason() === undefined;
  process.stderr.write(
    `rollplane: development dependencies not installed (${missing.join(', ')}): skipping the build. ` +
      (built ? 'dist/ is current.\n' : 'dist/ is not built: run `npm ci` (with dev dependencies), or install the packed tarball (`npm pack`).\n'),
  );
  process.exit(0);
}

const run = (command, args) => {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};
// The tests' client; a checkout without the Prisma configuration (the image's build context) has no tests to serve.
if (existsSync(path.join(root, 'prisma.sqlite.config.ts'))) run('npx', ['--no-install', 'prisma', 'generate', '--config', 'prisma.sqlite.config.ts']);
run(process.execPath, ['scripts/build.mjs', '--if-stale']);
