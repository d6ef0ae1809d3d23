/**
 * The `rollplane` command's entry point (bin/rollplane.js runs its build): the CLI (src/cli/main.ts) composed with the
 * registered kinds' bump subcommands and fleet parts (src/kinds/cli.ts: their `cli.ts`, no controllers) and, loaded
 * on demand for `rollplane serve`, the server. A file of its own, outside src/cli, because the kinds' CLI parts import
 * the CLI's helpers: the CLI importing them back would be a cycle (ADR 0045).
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ignoreClosedStdout, main as cliMain, type CliParts } from './cli/main.js';
import type { CliIo } from './cli/runtime.js';
import { KIND_BUMP_SUBCOMMANDS, KIND_FLEET_PARTS } from './kinds/cli.js';

export { ignoreClosedStdout };

const PARTS: CliParts = {
  bumpSubcommands: KIND_BUMP_SUBCOMMANDS,
  fleetParts: KIND_FLEET_PARTS,
  // Loaded on demand: the client commands should not pay for the server's start-up imports.
  serve: async (flags) => (await import('./serve.js')).serve(flags),
};

/**
 * Runs `rollplane argv…` and resolves with the exit code: 0 success, 1 failure (rollout failed, aborted or rolled
 * back; request refused), 2 usage error or `--wait` timeout, 3 server unreachable or token refused.
 */
export function main(argv: readonly string[], io?: CliIo): Promise<number> {
  return cliMain(argv, PARTS, io);
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  ignoreClosedStdout();
  process.exitCode = await main(process.argv.slice(2));
}
