import { Command, CommanderError } from 'commander';
import { SETTINGS } from '../config.js';
import { VERSION } from '../version.js';
import { registerBump, type BumpSubcommand } from './commands/bump.js';
import { registerCluster } from './commands/cluster.js';
import { registerFleet } from './commands/fleet.js';
import type { AnyFleetPart } from './fleet.js';
import { registerHistory } from './commands/history.js';
import { registerNotify } from './commands/notify.js';
import { registerRollout } from './commands/rollout.js';
import { registerToken } from './commands/token.js';
import { registerWindow } from './commands/window.js';
import { registerAnalysisTemplate } from './commands/analysisTemplate.js';
import { ExitCode } from './exitCodes.js';
import type { CliIo } from './runtime.js';

/**
 * The `rollplane` command. `serve` (the default) runs the service; `sim` runs the embedded Kubernetes simulator alone;
 * `bump`, `rollout`, `history`, `fleet`, `drift`, `token` and `cluster` are the API client for people and CI pipelines (docs/ci.md).
 * Resolves with the exit code: 0 success, 1 failure (rollout failed, aborted or rolled back; request refused),
 * 2 usage error or `--wait` timeout, 3 server unreachable or token refused.
 */
/**
 * What the CLI's entry point (src/rollplane.ts, ADR 0045) gives it: the registered kinds' bump subcommands, and the
 * server for `serve` (loaded on demand there). Given, not imported, so that the CLI imports neither the kinds nor
 * the server (src/kinds imports the CLI's helpers).
 */
export interface CliParts {
  bumpSubcommands: readonly BumpSubcommand[];
  /** The kinds' parts of `rollplane fleet`, in the order it shows them. */
  fleetParts: readonly AnyFleetPart[];
  serve(flags: string[]): Promise<void>;
}

export async function main(
  argv: readonly string[],
  parts: CliParts,
  io: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let exitCode: number = ExitCode.Ok;
  const setExitCode = (code: number) => (exitCode = code);
  const program = new Command('rollplane')
    .description('Rollout control plane for Kubernetes fleets')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .showHelpAfterError('(add --help for usage)');

  program
    .command('serve', { isDefault: true })
    .description('Serve the GraphQL API, run the reconcilers and (without a kubeconfig) the embedded simulator')
    .allowUnknownOption()
    .helpOption('-h, --help', 'Show the settings')
    .addHelpText(
      'after',
      `\nSettings (flag or environment variable):\n${SETTINGS.map((s) => `  ${s.flag.padEnd(24)} ${s.env.padEnd(30)} ${s.description} (default: ${s.default})`).join('\n')}`,
    )
    .argument('[flags...]')
    .action(async (flags: string[]) => {
      await parts.serve(flags);
    });

  program
    .command('sim')
    .description('Run the embedded Kubernetes simulator alone and print its kubeconfig path (for kubectl and `ROLLPLANE_KUBE=kubeconfig`)')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '0')
    .option(
      '--fleet <fleet>',
      'demo, empty, or sizes like pools=1000,clusters=100,nodes=50; add ,upstream=vm-dhcp+vc-manager+caa for upstream controllers',
      'demo',
    )
    .option('--kubeconfig <path>', 'where to write the kubeconfig (default: a temporary file)')
    .option('--clusters <clusters>', 'also run simulated member clusters: `demo` (edge-1, edge-2), a count N (sim-1 … sim-N) or names a,b,c')
    .option('--cluster-fleet <fleet>', "each simulated member cluster's own fleet (with --clusters N or names)", 'pools=3,nodes=1,peers=0')
    .option('--admin-port <port>', 'the simulated clusters\' admin endpoint (PUT /sim/clusters/NAME {"state":"unreachable"})', '0')
    .action(async (options: { host: string; port: string; fleet: string; kubeconfig?: string; clusters?: string; clusterFleet: string; adminPort: string }) => {
      const port = portOption('--port', options.port);
      const { startSimulator } = await import('../sim/index.js');
      const { simulatedClusterSpecs, startSimulatedClusters } = await import('../sim/simulatedClusters.js');
      let specs: ReturnType<typeof simulatedClusterSpecs> = [];
      try {
        specs = options.clusters ? simulatedClusterSpecs(options.clusters, options.clusterFleet) : [];
      } catch (error) {
        process.stderr.write(`rollplane sim: --clusters: ${(error as Error).message}\n`);
        process.exit(2);
      }
      const sim = await startSimulator({
        host: options.host,
        port,
        ...(options.fleet === 'empty' ? {} : { fleet: options.fleet }),
        ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}),
      });
      process.stdout.write(`rollplane simulator listening on ${sim.url}\nKUBECONFIG=${sim.kubeconfigPath}\n`);
      const members =
        specs.length > 0
          ? await startSimulatedClusters({ clusters: specs, host: options.host, adminPort: portOption('--admin-port', options.adminPort) })
          : undefined;
      if (members) {
        for (const cluster of members.clusters.values())
          process.stdout.write(`cluster ${cluster.name} listening on ${cluster.url} (${cluster.kubeconfigPath})\n`);
        process.stdout.write(`clusters KUBECONFIG=${members.kubeconfigPath} (a context per cluster)\nclusters admin ${members.adminUrl}/sim/clusters\n`);
      }
      const stop = () => void Promise.all([sim.stop(), members?.stop()]).then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });

  registerBump(program, io, setExitCode, parts.bumpSubcommands);
  registerRollout(program, io, setExitCode);
  registerHistory(program, io, setExitCode);
  registerFleet(program, io, setExitCode, parts.fleetParts);
  registerToken(program, io, setExitCode);
  registerCluster(program, io, setExitCode);
  registerNotify(program, io, setExitCode);
  registerWindow(program, io, setExitCode);
  registerAnalysisTemplate(program, io, setExitCode);

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    // Commander has already printed the message (or the help / version).
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    throw error;
  }
  return exitCode;
}

/** `rollplane history | head -1`: a reader that goes away is not an error. */
export function ignoreClosedStdout(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

/** A port option's value, or exit 2 saying what is wrong. */
function portOption(flag: string, text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`rollplane sim: ${flag} must be an integer between 0 and 65535 (got "${text}")\n`);
    process.exit(2);
  }
  return port;
}
