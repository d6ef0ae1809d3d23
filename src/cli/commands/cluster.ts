import { readFile, stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { ValidationError } from '../../errors.js';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { table } from '../format.js';
import {
  CLUSTERS_QUERY,
  DEREGISTER_CLUSTER_MUTATION,
  type MemberClusterView,
  REGISTER_CLUSTER_MUTATION,
  UPDATE_CLUSTER_LABELS_MUTATION,
} from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

/** The largest kubeconfig the server takes (RegisterClusterInput.kubeconfig, src/graphql/inputLimits.ts). */
const MAX_KUBECONFIG_BYTES = 200_000;

/** `key=value` (a label to set); the server checks the key and value as Kubernetes does. */
function labelToSet(raw: string): { key: string; value: string } {
  const eq = raw.indexOf('=');
  if (eq <= 0) throw new flags.InvalidArgument('Expected KEY=VALUE, such as env=prod.');
  return { key: raw.slice(0, eq), value: raw.slice(eq + 1) };
}

/** `key=value` sets a label, `key-` removes it (as `kubectl label`). */
function labelChange(raw: string): { key: string; value: string | null } {
  const removal = /^([^=\s]+)-$/.exec(raw);
  if (removal) return { key: removal[1]!, value: null };
  return labelToSet(raw);
}

/** The kubeconfig file's text; a usage error that says what is wrong with the file, never what is in it. */
async function readKubeconfig(file: string): Promise<string> {
  let size: number;
  try {
    const info = await stat(file);
    // A directory, a device (/dev/zero never ends), a socket: none holds a kubeconfig.
    if (!info.isFile()) throw new ValidationError('--kubeconfig', `${file} is not a regular file`);
    size = info.size;
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new ValidationError('--kubeconfig', `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (size > MAX_KUBECONFIG_BYTES) throw new ValidationError('--kubeconfig', `${file} is larger than ${MAX_KUBECONFIG_BYTES} bytes`);
  return readFile(file, 'utf8');
}

const labelsText = (cluster: MemberClusterView) => cluster.labels.map((l) => `${l.key}=${l.value}`).join(',') || '-';

/** The `cluster list` table: one row per cluster, health with its reason, since, labels and kinds. */
export function formatClusters(clusters: readonly MemberClusterView[]): string {
  if (clusters.length === 0) return 'no member clusters';
  return table(
    ['NAME', 'HEALTH', 'SINCE', 'VERSION', 'SOURCE', 'LABELS', 'KINDS'],
    clusters.map((c) => [
      c.name,
      c.health.message ? `${c.health.state} (${c.health.message})` : c.health.state,
      c.health.since,
      c.health.serverVersion ?? '-',
      c.source,
      labelsText(c),
      c.kinds.join(',') || '-',
    ]),
  );
}

const describe = (c: MemberClusterView) => `${c.name} (${c.source}, ${c.health.state}${labelsText(c) === '-' ? '' : `, ${labelsText(c)}`})`;

export function registerCluster(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const cluster = program
    .command('cluster')
    .description('Member clusters: list them (any token), register, relabel and deregister them (admin token required)');

  addCommonOptions(cluster.command('add'))
    .description(
      'Register a member cluster from a kubeconfig file (its current context; no exec plugins or file references). The credentials are kept by the server (docs/adr/0056), never printed; the cluster shows CONNECTING, then READY or why not',
    )
    .argument('<name>', 'member cluster name (DNS-1123 label; not local)', flags.dnsLabel)
    .requiredOption('--kubeconfig <file>', 'kubeconfig file whose current context reaches the cluster')
    .option('--label <key=value>', 'a label, repeatable (env=prod)', flags.repeatable(labelToSet))
    .option('--verify', 'probe the cluster first and register nothing unless it answers READY')
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const { kubeconfig, label, verify } = ctx.flags<{ kubeconfig: string; label?: { key: string; value: string }[]; verify?: boolean }>();
        const text = await readKubeconfig(kubeconfig);
        const data = await ctx.client.request(REGISTER_CLUSTER_MUTATION, { input: { name, kubeconfig: text, labels: label ?? [], verify: verify === true } });
        ctx.result({ cluster: data.registerCluster }, `registered member cluster ${describe(data.registerCluster)}`);
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(cluster.command('list'))
    .description('List member clusters: health and since when, version, source, labels and the kinds each serves')
    .option('--selector <selector>', 'only clusters matching this label selector (env=prod,tier!=edge,region in (eu,us))', flags.labelSelector)
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const { selector } = ctx.flags<{ selector?: string }>();
        const data = await ctx.client.request(CLUSTERS_QUERY, selector ? { selector } : {});
        ctx.result({ clusters: data.clusters }, formatClusters(data.clusters));
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(cluster.command('label'))
    .description('Set (key=value) and remove (key-) labels of a member cluster registered through the API, or of local')
    .argument('<name>', 'member cluster name', flags.dnsLabel)
    .argument('<changes...>', 'key=value to set, key- to remove')
    .action(
      clientAction(io, setExitCode, async (ctx, name: string, changes: string[]) => {
        let parsed: { key: string; value: string | null }[];
        try {
          parsed = changes.map(labelChange);
        } catch (error) {
          throw new ValidationError('changes', `${(error as Error).message} Use key=value to set and key- to remove.`);
        }
        const labels = parsed.filter((c): c is { key: string; value: string } => c.value !== null);
        const remove = parsed.filter((c) => c.value === null).map((c) => c.key);
        const data = await ctx.client.request(UPDATE_CLUSTER_LABELS_MUTATION, { name, labels, remove });
        ctx.result({ cluster: data.updateClusterLabels }, `labelled member cluster ${describe(data.updateClusterLabels)}`);
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(cluster.command('remove'))
    .description('Deregister a member cluster registered through the API (refused while a rollout in it is running)')
    .argument('<name>', 'member cluster name', flags.dnsLabel)
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const data = await ctx.client.request(DEREGISTER_CLUSTER_MUTATION, { name });
        ctx.result({ cluster: data.deregisterCluster }, `deregistered member cluster ${data.deregisterCluster.name}`);
        return ExitCode.Ok;
      }),
    );
}
