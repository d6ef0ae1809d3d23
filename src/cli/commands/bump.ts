import type { Command } from 'commander';
import {
  agentImageInput,
  clusterVersionInput,
  nodeAgentImageInput,
  type AgentImageOptions,
  type ClusterVersionOptions,
  type NodeAgentImageOptions,
} from '../bumpInputs.js';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { formatBump, formatRollout, PLAN_ROWS } from '../format.js';
import { BUMP_MUTATIONS, type BumpPayload } from '../operations.js';
import { addCommonOptions, addWaitOptions, clientAction, exitCodeForState, type CliContext, type CliIo, type WaitOptions } from '../runtime.js';
import { addCauseOptions } from './causeOptions.js';
// The flags' ranges and the documented defaults are the kind contracts' own (limits.ts files: no zod on every CLI start),
// so the CLI refuses what the server would.
import { STRATEGY_DEFAULTS } from '../../domain/kinds/limits.js';
import { AGENT_POOL_RANGES } from '../../kinds/agentPool/limits.js';
import { DEFAULT_MIN_READY_SECONDS, DEFAULT_PEER_RUNTIME_CLASS, NODE_AGENT_RANGES } from '../../kinds/nodeAgent/limits.js';
import { DEFAULT_MAX_CONCURRENT, VIRTUAL_CLUSTER_RANGES } from '../../kinds/virtualCluster/limits.js';

/** Sends a bump; with --wait follows the rollout it started (or found under the idempotency key) to its end. */
async function runBump(ctx: CliContext, send: Promise<BumpPayload>, options: WaitOptions & { plan?: boolean }): Promise<number> {
  const payload = await send;
  if (!options.wait || payload.dryRun) {
    ctx.result(payload, formatBump(payload, options.plan));
    return ExitCode.Ok;
  }
  if (!ctx.json) ctx.result(null, formatBump(payload, options.plan));
  const final = await ctx.follow(payload.rollout.id, options.timeout);
  ctx.result({ ...payload, rollout: final }, `\n${formatRollout(final)}`);
  return exitCodeForState(final);
}

/** The flags every bump shares, listed after the command's own. */
const withSharedFlags = (command: Command) =>
  addCommonOptions(addWaitOptions(addCauseOptions(command.option('--plan', `list every target of the plan (default: the first ${PLAN_ROWS} and a summary)`))));

export function registerBump(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const bump = program.command('bump').description('Start a rollout of a new version (agent image, node agent image, cluster version)');

  withSharedFlags(
    bump
      .command('agent-image')
      .description('Roll a new DHCP agent image out to IPPools')
      .argument('<image>', 'OCI image reference, e.g. registry.example.com/dhcp-agent:v1.2.3', flags.image)
      .option('--namespace <ns>', 'only pools in this namespace (repeatable)', flags.repeatable(flags.dnsLabel))
      .option('--pool <ns/name>', 'only this pool, namespace/name or name (repeatable)', flags.repeatable(flags.optionallyNamespacedName))
      .option('--selector <labels>', 'only pools matching this label selector, e.g. env=prod,tier!=edge', flags.labelSelector)
      .option(
        '--max-unavailable <n|%>',
        `pools unavailable or in progress at once, count or percent (server default ${STRATEGY_DEFAULTS.maxUnavailable})`,
        flags.countOrPercent,
      )
      .option('--canary <n>', 'pause after the first N pools until resumed', flags.intIn(AGENT_POOL_RANGES.canary))
      .option(
        '--progress-deadline <duration>',
        `time a pool may take to become Ready (seconds or 10m; server default ${STRATEGY_DEFAULTS.progressDeadlineSeconds})`,
        flags.durationIn(AGENT_POOL_RANGES.progressDeadlineSeconds),
      )
      .option(
        '--failure-threshold <n>',
        `failed pools that fail the rollout (server default ${STRATEGY_DEFAULTS.failureThreshold})`,
        flags.intIn(AGENT_POOL_RANGES.failureThreshold),
      )
      .option('--auto-rollback', 'roll changed pools back when the rollout fails (the server default)')
      .option('--no-auto-rollback', 'keep a failed rollout in place instead of rolling it back')
      .option('--allow-downgrade', 'allow a semver downgrade of the image tag')
      .option('--supersede', 'replace active rollouts of the same pools instead of failing with CONFLICT')
      .option('--dry-run', 'show the plan; change nothing'),
  ).action(
    clientAction(io, setExitCode, (ctx, image: string) => {
      const options = ctx.flags<AgentImageOptions & WaitOptions & { plan?: boolean }>();
      const { input } = agentImageInput(image, options, ctx.ci);
      return runBump(
        ctx,
        ctx.client.request(BUMP_MUTATIONS.bumpAgentImage, { input }).then((d) => d.bumpAgentImage),
        options,
      );
    }),
  );

  withSharedFlags(
    bump
      .command('node-agent-image')
      .description('Roll a new image out to a node-agent DaemonSet, node by node')
      .argument('<namespace/name>', 'the DaemonSet', flags.namespacedName)
      .argument('<image>', 'OCI image reference', flags.image)
      .option(
        '--mode <mode>',
        'node-by-node or surge (server default: surge for a DaemonSet that updates by surge itself, else node-by-node)',
        flags.oneOf(['node-by-node', 'surge'], (v) => v.replace(/-/g, '_').toUpperCase()),
      )
      .option('--canary-node-selector <labels>', 'nodes matching this label selector go first', flags.labelSelector)
      .option(
        '--node-deadline <duration>',
        `time a node may take (seconds or 10m; server default: the agent's startupProbe budget plus 120 s, at least ${STRATEGY_DEFAULTS.progressDeadlineSeconds})`,
        flags.durationIn(NODE_AGENT_RANGES.nodeDeadlineSeconds),
      )
      .option(
        '--min-ready <duration>',
        `time the new agent must stay Ready before the node counts as done (server default ${DEFAULT_MIN_READY_SECONDS})`,
        flags.durationIn(NODE_AGENT_RANGES.minReadySeconds),
      )
      .option(
        '--failure-threshold <n>',
        `failed nodes that fail the rollout (server default ${STRATEGY_DEFAULTS.failureThreshold})`,
        flags.intIn(NODE_AGENT_RANGES.failureThreshold),
      )
      .option(
        '--peer-runtime-class <name>',
        `runtime class of the peer pods gating each node (server default ${DEFAULT_PEER_RUNTIME_CLASS})`,
        flags.dnsSubdomain,
      )
      .option('--dry-run', 'show the plan; change nothing'),
  ).action(
    clientAction(io, setExitCode, (ctx, target: string, image: string) => {
      const options = ctx.flags<NodeAgentImageOptions & WaitOptions & { plan?: boolean }>();
      const { input } = nodeAgentImageInput(target, image, options, ctx.ci);
      return runBump(
        ctx,
        ctx.client.request(BUMP_MUTATIONS.bumpNodeAgentImage, { input }).then((d) => d.bumpNodeAgentImage),
        options,
      );
    }),
  );

  withSharedFlags(
    bump
      .command('cluster-version')
      .description('Change a ClusterVersion and upgrade the VirtualClusters that use it')
      .argument('<name>', 'the ClusterVersion', flags.dnsSubdomain)
      .option('--apiserver-image <image>', 'new apiserver image', flags.image)
      .option('--apiserver-arg <arg>', 'apiserver argument (repeatable; the list replaces the container args)', flags.repeatable(flags.text(4096)))
      .option('--apiserver-env <NAME=VALUE|NAME->', 'set (or with NAME- remove) an apiserver env variable (repeatable)', flags.repeatable(flags.envVar))
      .option('--controller-manager-image <image>', 'new controller-manager image', flags.image)
      .option('--controller-manager-arg <arg>', 'controller-manager argument (repeatable; replaces the container args)', flags.repeatable(flags.text(4096)))
      .option('--controller-manager-env <NAME=VALUE|NAME->', 'set or remove a controller-manager env variable (repeatable)', flags.repeatable(flags.envVar))
      .option('--spec-patch <json>', 'a JSON merge patch of the ClusterVersion spec, for anything else', flags.json)
      .option('--cluster <ns/name>', 'only this VirtualCluster (repeatable; default every cluster using the version)', flags.repeatable(flags.namespacedName))
      .option(
        '--max-concurrent <n>',
        `clusters upgrading at once (server default ${DEFAULT_MAX_CONCURRENT})`,
        flags.intIn(VIRTUAL_CLUSTER_RANGES.maxConcurrent),
      )
      .option(
        '--failure-threshold <n>',
        `failed clusters that fail the rollout (server default ${STRATEGY_DEFAULTS.failureThreshold})`,
        flags.intIn(VIRTUAL_CLUSTER_RANGES.failureThreshold),
      )
      .option(
        '--progress-deadline <duration>',
        `time one cluster may take (seconds or 10m; server default ${STRATEGY_DEFAULTS.progressDeadlineSeconds})`,
        flags.durationIn(VIRTUAL_CLUSTER_RANGES.progressDeadlineSeconds),
      )
      .option('--dry-run', 'show the plan; change nothing'),
  ).action(
    clientAction(io, setExitCode, (ctx, name: string) => {
      const options = ctx.flags<ClusterVersionOptions & WaitOptions & { plan?: boolean }>();
      const { input } = clusterVersionInput(name, options, ctx.ci);
      return runBump(
        ctx,
        ctx.client.request(BUMP_MUTATIONS.bumpClusterVersion, { input }).then((d) => d.bumpClusterVersion),
        options,
      );
    }),
  );
}
