import { readPages } from '../pages.js';
import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { type AnyFleetPart, fleetQuery, formatFleet } from '../fleet.js';
import { formatDrift } from '../format.js';
import { KIND_FLAG_HELP, kindOfFlag, parseKindFlag } from '../kindFlag.js';
import { DRIFT_QUERY } from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

/** Drift items per request; `--limit` beyond it is fetched page by page. */
const DRIFT_PAGE_SIZE = 100;

/**
 * `rollplane fleet` (the fleet at a glance, from the kinds' parts in the CLI's list order) and `rollplane drift` (what
 * runs another version than it should).
 */
export function registerFleet(program: Command, io: CliIo, setExitCode: (code: number) => void, fleetParts: readonly AnyFleetPart[]): void {
  const query = fleetQuery(fleetParts);
  addCommonOptions(program.command('fleet'))
    .description('The fleet at a glance: targets per kind, how many drifted, the node-agent sets and the active rollouts')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const fleet = await ctx.client.request(query);
        ctx.result(fleet, formatFleet(fleet, fleetParts));
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(program.command('drift'))
    .description('Targets whose running version differs from their desired one; exit 1 when there are any (for CI gates)')
    .option('--kind <kind>', KIND_FLAG_HELP, parseKindFlag)
    .option('--limit <n>', 'how many targets to list', flags.integer(1, 10_000), 100)
    .option('--cluster <name>', 'the member cluster to read (default local)')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const options = ctx.flags<{ kind?: string; limit: number; cluster?: string }>();
        const kind = kindOfFlag(options.kind) ?? null;
        const cluster = options.cluster ?? null;
        const { nodes: items, totalCount } = await readPages(
          async (first, after) => (await ctx.client.request(DRIFT_QUERY, { kind, first, after, cluster })).drift,
          DRIFT_PAGE_SIZE,
          options.limit,
        );
        ctx.result({ totalCount, items }, formatDrift(items, totalCount));
        return totalCount > 0 ? ExitCode.Failed : ExitCode.Ok;
      }),
    );
}
