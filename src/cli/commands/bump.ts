import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { formatBump, formatRollout, PLAN_ROWS } from '../format.js';
import type { BumpPayload } from '../operations.js';
import { addCommonOptions, addWaitOptions, exitCodeForState, type CliContext, type CliIo, type WaitOptions } from '../runtime.js';
import { addCauseOptions } from './causeOptions.js';

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
  addCommonOptions(
    addWaitOptions(
      addCauseOptions(
        command
          .option(
            '--clusters <name,…>',
            "member clusters the bump spans, by name (comma-separated, repeatable; default: local); each one's targets are selected inside it",
            flags.dnsLabelList,
          )
          .option(
            '--cluster-selector <labels>',
            'member clusters the bump spans, by label selector, e.g. tier=edge (with --clusters: both)',
            flags.labelSelector,
          )
          .option(
            '--wave-strategy <file>',
            'stage the bump in ordered waves over its member clusters: a JSON or YAML file (docs/waves.md); --dry-run shows the waves',
            flags.waveStrategyFile,
          )
          .option('--plan', `list every target of the plan (default: the first ${PLAN_ROWS} and a summary)`),
      ),
    ),
  );

/** What a kind's bump subcommand is registered with: the CLI's I/O, and the bump's shared flags and run. */
export interface BumpKit {
  io: CliIo;
  setExitCode: (code: number) => void;
  /** Adds the flags every bump shares, after the command's own. */
  withSharedFlags: (command: Command) => Command;
  /** Sends the bump; with --wait follows the rollout to its end; returns the exit code. */
  runBump: (ctx: CliContext, send: Promise<BumpPayload>, options: WaitOptions & { plan?: boolean }) => Promise<number>;
}

/** A rollout kind's `rollplane bump <what>` (its src/kinds/<kind>/cli.ts, ADR 0045): adds its subcommand to `bump`. */
export type BumpSubcommand = (bump: Command, kit: BumpKit) => void;

/** `rollplane bump`, with each registered kind's subcommand (the CLI's list of kinds, src/kinds/cli.ts). */
export function registerBump(program: Command, io: CliIo, setExitCode: (code: number) => void, subcommands: readonly BumpSubcommand[]): void {
  const bump = program.command('bump').description('Start a rollout of a new version (agent image, node agent image, cluster version)');
  for (const subcommand of subcommands) subcommand(bump, { io, setExitCode, withSharedFlags, runBump });
}
