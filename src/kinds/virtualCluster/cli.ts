/**
 * The VIRTUAL_CLUSTER kind's part of the CLI (ADR 0045): `rollplane bump cluster-version` and its input. Imports only
 * the CLI's helpers and the contract's numbers, so the CLI loads no server code.
 */
import type { Command } from 'commander';
import type { BumpKit, BumpSubcommand } from '../../cli/commands/bump.js';
import { type BuiltInput, type CauseOptions, withCommon, sorted } from '../../cli/bumpInputs.js';
import type { CiContext } from '../../cli/ciContext.js';
import type { FleetPart } from '../../cli/fleet.js';
import * as flags from '../../cli/flags.js';
import {
  BumpClusterVersionDocument,
  type BumpClusterVersionInput,
  type ComponentChangeInput,
  VirtualClusterFleetFragmentDoc,
  type VirtualClusterFleetFragment,
} from '../../cli/generated/graphql.js';
import { clientAction, type WaitOptions } from '../../cli/runtime.js';
import { STRATEGY_DEFAULTS } from '../../domain/kinds/limits.js';
import { ValidationError } from '../../errors.js';
import { DEFAULT_MAX_CONCURRENT, VIRTUAL_CLUSTER_RANGES } from './limits.js';

export interface ClusterVersionOptions extends CauseOptions {
  apiserverImage?: string;
  apiserverArg?: string[];
  apiserverEnv?: { name: string; value: string | null }[];
  controllerManagerImage?: string;
  controllerManagerArg?: string[];
  controllerManagerEnv?: { name: string; value: string | null }[];
  specPatch?: unknown;
  cluster?: string[];
  maxConcurrent?: number;
  maxConcurrentPerMemberCluster?: number;
  failureThreshold?: number;
  progressDeadline?: number;
  dryRun?: boolean;
}

function component(image: string | undefined, args: string[] | undefined, env: { name: string; value: string | null }[] | undefined) {
  const change: ComponentChangeInput = {};
  if (image !== undefined) change.image = image;
  if (args?.length) change.args = args;
  if (env?.length) change.env = env;
  return Object.keys(change).length ? change : undefined;
}

export function clusterVersionInput(clusterVersion: string, options: ClusterVersionOptions, ci: CiContext): BuiltInput<BumpClusterVersionInput> {
  const apiServer = component(options.apiserverImage, options.apiserverArg, options.apiserverEnv);
  const controllerManager = component(options.controllerManagerImage, options.controllerManagerArg, options.controllerManagerEnv);
  if (options.specPatch !== undefined && (typeof options.specPatch !== 'object' || options.specPatch === null || Array.isArray(options.specPatch))) {
    throw new ValidationError('--spec-patch', 'must be a JSON object (a merge patch of the ClusterVersion spec)');
  }
  if (!apiServer && !controllerManager && options.specPatch === undefined) {
    throw new ValidationError(
      'cluster-version',
      'nothing to change: give --apiserver-image/--apiserver-arg/--apiserver-env, the --controller-manager-… equivalents, or --spec-patch',
    );
  }
  const clusters = sorted(options.cluster);
  const input: BumpClusterVersionInput = { clusterVersion };
  if (apiServer) input.apiServer = apiServer;
  if (controllerManager) input.controllerManager = controllerManager;
  if (options.specPatch !== undefined) input.specPatch = options.specPatch;
  if (clusters.length) input.clusters = clusters;
  if (options.maxConcurrent !== undefined) input.maxConcurrent = options.maxConcurrent;
  if (options.maxConcurrentPerMemberCluster !== undefined) input.maxConcurrentPerMemberCluster = options.maxConcurrentPerMemberCluster;
  if (options.failureThreshold !== undefined) input.failureThreshold = options.failureThreshold;
  if (options.progressDeadline !== undefined) input.progressDeadlineSeconds = options.progressDeadline;
  const target = clusters.length ? `${clusterVersion};clusters=${clusters.join(',')}` : clusterVersion;
  return withCommon(input, ci, options, 'bump-cluster-version', target, options.dryRun === true);
}

/** `rollplane bump cluster-version`; its flags' ranges and documented defaults are the contract's (limits.ts: no zod on a CLI start). */
export const virtualClusterBump: BumpSubcommand = (bump: Command, { io, setExitCode, withSharedFlags, runBump }: BumpKit) => {
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
        '--max-concurrent-per-member-cluster <n>',
        'across member clusters: VirtualClusters of one member cluster upgrading at once (default: no per-member limit)',
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
        ctx.client.request(BumpClusterVersionDocument, { input }).then((d) => d.bumpClusterVersion),
        options,
      );
    }),
  );
};

/** Its row of `rollplane fleet`: the clusters, how many are behind or upgrading, and the cluster versions. */
export const virtualClusterFleet: FleetPart<VirtualClusterFleetFragment> = {
  fragment: VirtualClusterFleetFragmentDoc,
  row: (answer) => {
    const clusters = answer.virtualClusters.edges.map((e) => e.node);
    return [
      'virtual clusters',
      String(answer.virtualClusters.totalCount),
      String(clusters.filter((c) => !c.upToDate).length),
      `${clusters.filter((c) => c.upgrading).length} upgrading; ${answer.clusterVersions.totalCount} cluster versions`,
    ];
  },
};
