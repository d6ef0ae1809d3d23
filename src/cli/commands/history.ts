import { readPages } from '../pages.js';
import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { formatHistory } from '../format.js';
import type { RolloutFilter, RolloutState } from '../generated/graphql.js';
import { KIND_FLAG_HELP, kindOfFlag, parseKindFlag } from '../kindFlag.js';
import { HISTORY_PAGE_SIZE, HISTORY_QUERY } from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

const STATES = ['pending', 'progressing', 'paused', 'succeeded', 'failed', 'aborted', 'rolled-back'] as const;
const toEnum = (value: string) => value.replace(/-/g, '_').toUpperCase();

/** The API's enum values, to turn a validated flag (`toEnum` form) into a typed filter value. */
const STATE_VALUES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];

interface HistoryOptions {
  kind?: string;
  state?: string[];
  limit: number;
  search?: string;
  target?: string;
  cluster?: string[];
  ofVersion?: string;
  wave?: string;
  since?: number;
}

/** `--state failed,aborted` or repeated `--state`. */
const stateList = (raw: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  ...raw
    .split(',')
    .filter(Boolean)
    .map((s) => flags.oneOf(STATES, toEnum)(s.replace(/_/g, '-'))),
];

export function registerHistory(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  addCommonOptions(program.command('history'))
    .description('List rollouts, newest first')
    .option('--kind <kind>', KIND_FLAG_HELP, parseKindFlag)
    .option('--state <states>', `only these states (comma-separated or repeated): ${STATES.join(', ')}`, stateList)
    .option('--limit <n>', 'how many rollouts', flags.integer(1, 500), 20)
    .option('--search <text>', 'case-insensitive substring of the version, actor, commit or message', flags.text(256))
    .option('--target <name>', 'only rollouts with a target of this name', flags.text(253))
    .option('--cluster <name,…>', 'only rollouts with a target in any of these member clusters (comma-separated or repeated)', flags.dnsLabelList)
    .option('--of-version <version>', 'only rollouts to or from exactly this version (an image, or a Kubernetes version)', flags.text(512))
    .option('--wave <name>', 'only staged rollouts with a wave of this name (e.g. prod)', flags.dnsLabel)
    .option('--since <duration>', 'only rollouts created in the last duration (e.g. 24h, 7d)', flags.duration(1, 10 * 365 * 86_400))
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const options = ctx.flags<HistoryOptions>();
        const filter: RolloutFilter = {};
        const kind = kindOfFlag(options.kind);
        if (kind) filter.kind = kind;
        if (options.state?.length) filter.states = [...new Set(options.state)].flatMap((s) => STATE_VALUES.filter((v) => v === s));
        if (options.search !== undefined) filter.search = options.search;
        if (options.target !== undefined) filter.targetName = options.target;
        if (options.cluster?.length) filter.clusters = [...new Set(options.cluster)].sort();
        if (options.ofVersion !== undefined) filter.version = options.ofVersion;
        if (options.wave !== undefined) filter.wave = options.wave;
        if (options.since !== undefined) filter.createdAfter = new Date(Date.now() - options.since * 1000).toISOString();
        const { nodes: rollouts, totalCount } = await readPages(
          async (first, after) => (await ctx.client.request(HISTORY_QUERY, { filter, first, after })).rollouts,
          HISTORY_PAGE_SIZE,
          options.limit,
        );
        ctx.result({ totalCount, rollouts }, formatHistory(rollouts, totalCount));
        return ExitCode.Ok;
      }),
    );
}
