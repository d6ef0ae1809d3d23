/**
 * The AGENT_POOL kind's part of the CLI (ADR 0045): `rollplane bump agent-image` and its input. Imports only the CLI's
 * helpers and the contract's numbers, so the CLI loads no server code.
 */
import type { Command } from 'commander';
import type { BumpKit, BumpSubcommand } from '../../cli/commands/bump.js';
import { type BuiltInput, type CauseOptions, withCommon, sorted } from '../../cli/bumpInputs.js';
import type { CiContext } from '../../cli/ciContext.js';
import type { FleetPart } from '../../cli/fleet.js';
import * as flags from '../../cli/flags.js';
import {
  BumpAgentImageDocument,
  type AgentRolloutStrategyInput,
  type BumpAgentImageInput,
  type PoolSelectorInput,
  AgentPoolFleetFragmentDoc,
  type AgentPoolFleetFragment,
} from '../../cli/generated/graphql.js';
import { clientAction, type WaitOptions } from '../../cli/runtime.js';
import { STRATEGY_DEFAULTS } from '../../domain/kinds/limits.js';
import { AGENT_POOL_RANGES } from './limits.js';

export interface AgentImageOptions extends CauseOptions {
  namespace?: string[];
  pool?: string[];
  selector?: string;
  maxUnavailable?: string;
  maxUnavailablePerMemberCluster?: string;
  canary?: number;
  progressDeadline?: number;
  failureThreshold?: number;
  autoRollback?: boolean;
  allowDowngrade?: boolean;
  supersede?: boolean;
  dryRun?: boolean;
}

export function agentImageInput(image: string, options: AgentImageOptions, ci: CiContext): BuiltInput<BumpAgentImageInput> {
  const namespaces = sorted(options.namespace);
  const names = sorted(options.pool);
  const pools: PoolSelectorInput = {};
  if (namespaces.length) pools.namespaces = namespaces;
  if (names.length) pools.names = names;
  if (options.selector !== undefined) pools.labelSelector = options.selector;

  const strategy: AgentRolloutStrategyInput = {};
  if (options.maxUnavailable !== undefined) strategy.maxUnavailable = options.maxUnavailable;
  if (options.maxUnavailablePerMemberCluster !== undefined) strategy.maxUnavailablePerMemberCluster = options.maxUnavailablePerMemberCluster;
  if (options.canary !== undefined) strategy.canary = options.canary;
  if (options.progressDeadline !== undefined) strategy.progressDeadlineSeconds = options.progressDeadline;
  if (options.failureThreshold !== undefined) strategy.failureThreshold = options.failureThreshold;
  if (options.autoRollback !== undefined) strategy.autoRollback = options.autoRollback;

  const input: BumpAgentImageInput = { image };
  if (Object.keys(pools).length) input.pools = pools;
  if (Object.keys(strategy).length) input.strategy = strategy;
  if (options.allowDowngrade) input.allowDowngrade = true;
  if (options.supersede) input.supersede = true;

  const target = Object.keys(pools).length
    ? [
        namespaces.length ? `ns=${namespaces.join(',')}` : '',
        names.length ? `pools=${names.join(',')}` : '',
        options.selector !== undefined ? `selector=${options.selector}` : '',
      ]
        .filter(Boolean)
        .join(';')
    : 'all-pools';
  return withCommon(input, ci, options, 'bump-agent-image', target, options.dryRun === true);
}

/** `rollplane bump agent-image`; its flags' ranges and documented defaults are the contract's (limits.ts: no zod on a CLI start). */
export const agentPoolBump: BumpSubcommand = (bump: Command, { io, setExitCode, withSharedFlags, runBump }: BumpKit) => {
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
      .option(
        '--max-unavailable-per-member-cluster <n|%>',
        'across member clusters: pools of one cluster in progress at once, count or percent (default: no per-cluster limit)',
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
        ctx.client.request(BumpAgentImageDocument, { input }).then((d) => d.bumpAgentImage),
        options,
      );
    }),
  );
};

/** Its row of `rollplane fleet`: the pools and how many drifted. */
export const agentPoolFleet: FleetPart<AgentPoolFleetFragment> = {
  fragment: AgentPoolFleetFragmentDoc,
  row: (answer) => ['agent pools', String(answer.agentPools.totalCount), String(answer.driftedPools.totalCount), ''],
};
