import { Command } from 'commander';
import { SETTINGS } from '../config.js';
import { serve } from '../serve.js';
import { VERSION } from '../version.js';

/**
 * The `rollplane` command. `serve` (the default) runs the service; `sim` runs the embedded Kubernetes simulator alone.
 * Exit codes: 0 success, 1 failure, 2 usage or configuration error.
 */
export async function main(argv: readonly string[]): Promise<void> {
  const program = new Command('rollplane')
    .description('Rollout control plane for Kubernetes fleets')
    .version(VERSION)
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));

  program
    .command('serve', { isDefault: true })
    .description('Serve the GraphQL API, run the reconcilers and (without a kubeconfig) the embedded simulator')
    .allowUnknownOption()
    .helpOption('-h, --help', 'Show the settings')
    .addHelpText('after', `\nSettings (flag or environment variable):\n${SETTINGS.map((s) => `  ${s.flag.padEnd(24)} ${s.env.padEnd(30)} ${s.description} (default: ${s.default})`).join('\n')}`)
    .argument('[flags...]')
    .action(async (flags: string[]) => serve(flags));

  program
    .command('sim')
    .description('Run the embedded Kubernetes simulator alone and print its kubeconfig path (for kubectl and `ROLLPLANE_KUBE=kubeconfig`)')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '0')
    .option('--fleet <fleet>', 'demo, empty, or sizes like pools=1000,clusters=100,nodes=50', 'demo')
    .option('--kubeconfig <path>', 'where to write the kubeconfig (default: a temporary file)')
    .action(async (options: { host: string; port: string; fleet: string; kubeconfig?: string }) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        process.stderr.write(`rollplane sim: --port must be an integer between 0 and 65535 (got "${options.port}")\n`);
        process.exit(2);
      }
      const { startSimulator } = await import('../sim/index.js');
      const sim = await startSimulator({
        host: options.host,
        port,
        ...(options.fleet === 'empty' ? {} : { fleet: options.fleet }),
        ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}),
      });
      process.stdout.write(`rollplane simulator listening on ${sim.url}\nKUBECONFIG=${sim.kubeconfigPath}\n`);
      const stop = () => void sim.stop().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });

  await program.parseAsync([...argv], { from: 'user' });
}
