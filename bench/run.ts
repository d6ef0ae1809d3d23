/**
 * `npm run bench -- <name> [<name> …]`: runs benchmarks by name (each `bench/<file>.ts` exports `run()`, prints its own
 * table and writes `bench/results/<name>.json`). With no name, lists them. `npm run bench` compiles first and runs the
 * JavaScript, as rollplane runs in production (under tsx each process holds ~30–70 MB more: transforms and source
 * maps); `npx tsx bench/run.ts <name>` runs the sources directly.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// As deploy/ runs the service. Set here, before any benchmark module is imported: graphql-js reads NODE_ENV once when
// it loads, and outside production it checks every instanceof for a second copy of itself (5–11% of the server's CPU
// in the api benchmark's profiles). Setting it later (benchApp.ts did) was too late for the modules already imported.
process.env.NODE_ENV ??= 'production';

const here = path.dirname(fileURLToPath(import.meta.url));
/** `.ts` from the sources, `.js` from the build (dist/bench). */
const ext = path.extname(fileURLToPath(import.meta.url));

const BENCHMARKS: Record<string, string> = {
  sim: `sim${ext}`,
  'sim-behaviour': `simBehaviour${ext}`,
  queue: `queue${ext}`,
  'agent-rollout': `agentRollout${ext}`,
  'cluster-upgrade': `clusterUpgrade${ext}`,
  'node-agent': `nodeAgent${ext}`,
  api: `api${ext}`,
  feed: `feed${ext}`,
  'cross-replica': `crossReplica${ext}`,
  notifications: `notifications${ext}`,
  clusters: `clusters${ext}`,
  waves: `waves${ext}`,
};
const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
if (names.length === 0) {
  process.stdout.write(`usage: npm run bench -- <name> [<name> …]\nbenchmarks: ${Object.keys(BENCHMARKS).join(', ')}\n`);
  process.exit(2);
}
for (const name of names) {
  const file = BENCHMARKS[name];
  if (!file || !existsSync(path.join(here, file))) {
    process.stderr.write(
      `unknown benchmark "${name}"; known: ${Object.keys(BENCHMARKS)
        .filter((n) => existsSync(path.join(here, BENCHMARKS[n]!)))
        .join(', ')}\n`,
    );
    process.exit(2);
  }
  process.stdout.write(`\n== ${name} ==\n`);
  const module = (await import(pathToFileURL(path.join(here, file)).href)) as { run?: () => Promise<unknown> };
  if (typeof module.run !== 'function') {
    process.stderr.write(`bench/${file} does not export run()\n`);
    process.exit(1);
  }
  await module.run();
}
