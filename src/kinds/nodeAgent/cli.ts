/**
 * The NODE_AGENT kind's part of the CLI (ADR 0045): `rollplane bump node-agent-image` and its input. Imports only the
 * CLI's helpers and the contract's numbers, so the CLI loads no server code.
 */
import type { Command } from 'commander';
import type { BumpKit, BumpSubcommand } from '../../cli/commands/bump.js';
import { type BuiltInput, type CauseOptions, withCommon } from '../../cli/bumpInputs.js';
import type { CiContext } from '../../cli/ciContext.js';
import type { FleetPart } from '../../cli/fleet.js';
import { table } from '../../cli/format.js';
import * as flags from '../../cli/flags.js';
import {
  BumpNodeAgentImageDocument,
  type BumpNodeAgentImageInput,
  NodeAgentFleetFragmentDoc,
  type NodeAgentFleetFragment,
} from '../../cli/generated/graphql.js';
import { clientAction, type WaitOptions } from '../../cli/runtime.js';
import { STRATEGY_DEFAULTS } from '../../domain/kinds/limits.js';
import { DEFAULT_MIN_READY_SECONDS, DEFAULT_PEER_RUNTIME_CLASS, NODE_AGENT_RANGES } from './limits.js';

export interface NodeAgentImageOptions extends CauseOptions {
  mode?: 'NODE_BY_NODE' | 'SURGE';
  canaryNodeSelector?: string;
  nodeDeadline?: number;
  minReady?: number;
  failureThreshold?: number;
  peerRuntimeClass?: string;
  dryRun?: boolean;
}

export function nodeAgentImageInput(namespacedName: string, image: string, options: NodeAgentImageOptions, ci: CiContext): BuiltInput<BumpNodeAgentImageInput> {
  const [namespace, name] = namespacedName.split('/') as [string, string];
  const input: BumpNodeAgentImageInput = { namespace, name, image };
  if (options.mode !== undefined) input.mode = options.mode;
  if (options.canaryNodeSelector !== undefined) input.canaryNodeSelector = options.canaryNodeSelector;
  if (options.nodeDeadline !== undefined) input.nodeDeadlineSeconds = options.nodeDeadline;
  if (options.minReady !== undefined) input.minReadySeconds = options.minReady;
  if (options.failureThreshold !== undefined) input.failureThreshold = options.failureThreshold;
  if (options.peerRuntimeClass !== undefined) input.peerRuntimeClass = options.peerRuntimeClass;
  return withCommon(input, ci, options, 'bump-node-agent-image', `${namespace}/${name}`, options.dryRun === true);
}

/** `rollplane bump node-agent-image`; its flags' ranges and documented defaults are the contract's (limits.ts: no zod on a CLI start). */
export const nodeAgentBump: BumpSubcommand = (bump: Command, { io, setExitCode, withSharedFlags, runBump }: BumpKit) => {
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
        ctx.client.request(BumpNodeAgentImageDocument, { input }).then((d) => d.bumpNodeAgentImage),
        options,
      );
    }),
  );
};

/** Its row of `rollplane fleet` (the nodes of its sets) and its table of sets after the drift line. */
export const nodeAgentFleet: FleetPart<NodeAgentFleetFragment> = {
  fragment: NodeAgentFleetFragmentDoc,
  row: (answer) => {
    const nodes = answer.nodeAgentSets.edges.flatMap((e) => e.node.nodes);
    return [
      'node agents',
      String(nodes.length),
      String(nodes.filter((n) => !n.upToDate).length),
      `${answer.nodeAgentSets.totalCount} DaemonSets; ${nodes.filter((n) => !n.ready).length} not ready`,
    ];
  },
  details: (answer) => {
    const sets = answer.nodeAgentSets.edges.map(({ node: s }) => [
      `${s.namespace}/${s.name}`,
      s.desiredImage,
      `${s.nodes.filter((n) => n.upToDate).length}/${s.nodes.length} up to date`,
      s.drivenBy ?? '-',
    ]);
    return sets.length ? table(['NODE-AGENT SET', 'IMAGE', 'NODES', 'ROLLOUT'], sets) : undefined;
  },
};
