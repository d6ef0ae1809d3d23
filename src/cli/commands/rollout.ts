import type { Command } from 'commander';
import { ErrorCode } from '../../errors.js';
import { causeFrom, idempotencyKeyFor, type CauseOptions } from '../bumpInputs.js';
import { ExitCode, RemoteError } from '../exitCodes.js';
import * as flags from '../flags.js';
import { formatRollout, formatTargets } from '../format.js';
import type { GateMeasurementsQuery, TargetState } from '../generated/graphql.js';
import { readPages } from '../pages.js';
import {
  ABORT_MUTATION,
  APPROVE_GATE_MUTATION,
  isTerminalState,
  REJECT_GATE_MUTATION,
  RETRY_GATE_MUTATION,
  GATE_MEASUREMENTS_QUERY,
  PAUSE_MUTATION,
  RESUME_MUTATION,
  ROLLBACK_MUTATION,
  ROLLOUT_QUERY,
  ROLLOUT_TARGETS_QUERY,
  type RolloutView,
} from '../operations.js';
import { addCommonOptions, addWaitOptions, clientAction, exitCodeForState, type CliContext, type CliIo, type WaitOptions } from '../runtime.js';
import { addCauseOptions } from './causeOptions.js';

const rolloutId = (raw: string): string => {
  if (raw.length === 0 || raw.length > 128 || /\s/.test(raw)) throw new flags.InvalidArgument('Expected a rollout id such as ro_…');
  return raw;
};

/** A rollout's state as an exit code when not waiting: 1 when it ended badly, else 0 (still running counts as fine). */
const statusExitCode = (rollout: RolloutView): number => (isTerminalState(rollout.state) ? exitCodeForState(rollout) : ExitCode.Ok);

/**
 * pause, resume and abort are retried like any request, so the retry of one whose answer was lost meets the rollout
 * already in the wanted state (CONFLICT): that is success, shown with the rollout as it is.
 */
async function idempotentTransition(ctx: CliContext, id: string, wanted: RolloutView['state'], send: () => Promise<RolloutView>): Promise<RolloutView> {
  try {
    return await send();
  } catch (error) {
    if (!(error instanceof RemoteError) || error.code !== ErrorCode.Conflict || error.details.state !== wanted) throw error;
    const data = await ctx.client.request(ROLLOUT_QUERY, { id });
    if (!data.rollout) throw error;
    if (!ctx.json) ctx.info(`rollout ${id} is already ${wanted}`);
    return data.rollout;
  }
}

async function finishWith(ctx: CliContext, rollout: RolloutView, options: WaitOptions): Promise<number> {
  if (!options.wait) {
    ctx.result({ rollout }, formatRollout(rollout));
    return statusExitCode(rollout);
  }
  const final = await ctx.follow(rollout.id, options.timeout);
  ctx.result({ rollout: final }, formatRollout(final));
  return exitCodeForState(final);
}

/** `rollplane rollout <name> <id> --gate <key>`: the commands about one gate of a staged rollout. */
function gateCommand(rollout: Command, name: string, description: string): Command {
  return rollout
    .command(name)
    .description(description)
    .argument('<id>', 'rollout id', rolloutId)
    .requiredOption('--gate <key>', 'the gate: before:<wave>, after:<wave>, or targets:<n> (between targets)', flags.text(80));
}

function gateLine(gate: { key: string; type: string; state: string; reason: string }): string {
  return `gate ${gate.key} (${gate.type}): ${gate.state}: ${gate.reason}`;
}

export type GateReport = NonNullable<NonNullable<GateMeasurementsQuery['rollout']>['gate']>;

/**
 * Measurements read a page at a time for every run of the gate: a page carries each row's query (up to 32 KB with its
 * arguments in), and the server refuses an answer over 4 MiB (attack 24, H3: a run of 64 KB rows failed at once).
 */
export const MEASUREMENT_PAGE = 50;

/** The gate with every measurement of each of its runs, read page by page. */
export async function gateWithEveryMeasurement(
  read: (first: number, after: number) => Promise<GateReport | null | undefined>,
): Promise<GateReport | undefined> {
  let report: GateReport | undefined;
  for (let after = 0; ; after += MEASUREMENT_PAGE) {
    const page = await read(MEASUREMENT_PAGE, after);
    if (!page) return report;
    if (!report) report = { ...page, analysisRuns: page.analysisRuns.map((run) => ({ ...run, measurements: [...run.measurements] })) };
    else {
      for (const run of page.analysisRuns) report.analysisRuns.find((r) => r.id === run.id)?.measurements.push(...run.measurements);
    }
    if (page.analysisRuns.every((run) => run.measurements.length < MEASUREMENT_PAGE)) return report;
  }
}

/** A gate, its attempts and its analysis runs with every measurement, one line each; a metric's query when it changes. */
function formatGate(gate: GateReport): string {
  const lines = [gateLine(gate)];
  for (const a of gate.attempts) {
    lines.push(
      `  attempt ${a.number} at ${String(a.at)}: ${a.answer}${a.retryAfterSeconds != null ? ` (retry after ${a.retryAfterSeconds}s)` : ''}: ${a.reason}`,
    );
  }
  for (const run of gate.analysisRuns) {
    lines.push(
      `  analysis ${run.id} (attempt ${run.attempt}${run.previousRunId ? `, retries ${run.previousRunId}` : ''}): ${run.phase}${run.message ? `: ${run.message}` : ''}`,
    );
    const shown = new Map<string, string>();
    for (const m of run.measurements) {
      const values = JSON.stringify(m.values);
      lines.push(
        `    ${m.metric} #${m.number} ${String(m.finishedAt)} ${m.verdict}${m.dryRun ? ' (dry run)' : ''} values=${values}${m.condition ? ` [${m.condition}]` : ''}${m.message ? ` ${m.message}` : ''}`,
      );
      if (shown.get(m.metric) !== m.query) lines.push(`      query: ${m.query}`);
      shown.set(m.metric, m.query);
    }
  }
  return lines.join('\n');
}

export function registerRollout(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const rollout = program.command('rollout').description('Inspect and control one rollout');

  addCommonOptions(
    addWaitOptions(
      rollout
        .command('status')
        .description('Show a rollout; with --wait follow it to its end (exit 0 succeeded, 1 failed/aborted/rolled back, 2 timeout)')
        .argument('<id>', 'rollout id', rolloutId),
    ),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const data = await ctx.client.request(ROLLOUT_QUERY, { id });
      if (!data.rollout) throw new RemoteError(ErrorCode.NotFound, `rollout ${id} not found`, { id });
      return finishWith(ctx, data.rollout, ctx.flags<WaitOptions>());
    }),
  );

  const TARGET_STATES = ['pending', 'progressing', 'succeeded', 'failed', 'skipped', 'cancelled'] as const;
  addCommonOptions(
    rollout
      .command('targets')
      .description("List a rollout's targets in admission order, optionally of one wave, one member cluster, one version and/or in one state")
      .argument('<id>', 'rollout id', rolloutId)
      .option('--wave <name>', "only the targets of this wave's clusters (a staged rollout)", flags.dnsLabel)
      .option('--cluster <name>', 'only the targets in this member cluster (local: the one rollplane runs in)', flags.dnsLabel)
      .option('--of-version <version>', 'only the targets changed to or from exactly this version', flags.text(512))
      .option(
        '--state <state>',
        `only targets in this state: ${TARGET_STATES.join(', ')}`,
        flags.oneOf(TARGET_STATES, (s) => s.toUpperCase()),
      )
      .option('--limit <n>', 'how many targets', flags.integer(1, 10_000), 100),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const options = ctx.flags<{ wave?: string; cluster?: string; ofVersion?: string; state?: TargetState; limit: number }>();
      const filter = { id, wave: options.wave ?? null, cluster: options.cluster ?? null, version: options.ofVersion ?? null, state: options.state ?? null };
      const { nodes, totalCount } = await readPages(
        async (first, after) => {
          const data = await ctx.client.request(ROLLOUT_TARGETS_QUERY, { ...filter, first, after });
          if (!data.rollout) throw new RemoteError(ErrorCode.NotFound, `rollout ${id} not found`, { id });
          return data.rollout.targets;
        },
        100,
        options.limit,
      );
      const scope = [
        options.wave ? ` of wave ${options.wave}` : '',
        options.cluster ? ` in cluster ${options.cluster}` : '',
        options.ofVersion ? ` to or from ${options.ofVersion}` : '',
        options.state ? ` in state ${options.state}` : '',
      ].join('');
      ctx.result({ totalCount, targets: nodes }, formatTargets(nodes, totalCount, scope));
      return ExitCode.Ok;
    }),
  );

  addCommonOptions(
    rollout
      .command('pause')
      .description('Stop admitting targets; admitted ones finish')
      .argument('<id>', 'rollout id', rolloutId)
      .option('--reason <text>', 'shown as the rollout message', flags.text(1024)),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const { reason } = ctx.flags<{ reason?: string }>();
      const paused = await idempotentTransition(
        ctx,
        id,
        'PAUSED',
        async () => (await ctx.client.request(PAUSE_MUTATION, { id, reason: reason ?? null })).pauseRollout,
      );
      ctx.result({ rollout: paused }, formatRollout(paused));
      return ExitCode.Ok;
    }),
  );

  addCommonOptions(addWaitOptions(rollout.command('resume').description('Continue a paused rollout').argument('<id>', 'rollout id', rolloutId))).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const resumed = await idempotentTransition(ctx, id, 'PROGRESSING', async () => (await ctx.client.request(RESUME_MUTATION, { id })).resumeRollout);
      return finishWith(ctx, resumed, ctx.flags<WaitOptions>());
    }),
  );

  addCommonOptions(
    rollout
      .command('abort')
      .description('End a rollout: nothing new is admitted, the rest is cancelled')
      .argument('<id>', 'rollout id', rolloutId)
      .option('--reason <text>', 'shown as the rollout message', flags.text(1024)),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const { reason } = ctx.flags<{ reason?: string }>();
      const aborted = await idempotentTransition(
        ctx,
        id,
        'ABORTED',
        async () => (await ctx.client.request(ABORT_MUTATION, { id, reason: reason ?? null })).abortRollout,
      );
      ctx.result({ rollout: aborted }, formatRollout(aborted));
      return ExitCode.Ok;
    }),
  );

  // Approval gates (issue 30), at a staged rollout's waves or between a rollout's targets: one decision, kept with the
  // token, its role and the comment.
  for (const [verb, description] of [
    ['approve', "Approve a rollout's approval gate, at a wave or between targets (approving twice counts once)"],
    ['reject', "Reject a rollout's approval gate, at a wave or between targets (one rejection fails it)"],
  ] as const) {
    addCommonOptions(gateCommand(rollout, verb, description).option('--comment <text>', 'why (kept with the decision)', flags.text(1000))).action(
      clientAction(io, setExitCode, async (ctx, id: string) => {
        const { gate, comment } = ctx.flags<{ gate: string; comment?: string }>();
        const variables = { id, gate, comment: comment ?? null };
        const decided =
          verb === 'approve'
            ? (await ctx.client.request(APPROVE_GATE_MUTATION, variables)).approveGate
            : (await ctx.client.request(REJECT_GATE_MUTATION, variables)).rejectGate;
        ctx.result({ gate: decided }, gateLine(decided));
        return ExitCode.Ok;
      }),
    );
  }

  // An analysis gate that failed or holds the run (issue 33): measured again, as a new attempt linked to the old one.
  addCommonOptions(
    gateCommand(
      rollout,
      'retry-gate',
      "Retry a rollout's analysis gate (a staged run's, or targets:<n>) that failed or holds the run (a new analysis run; a run it paused resumes)",
    ),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const { gate } = ctx.flags<{ gate: string }>();
      const retried = (await ctx.client.request(RETRY_GATE_MUTATION, { id, gate })).retryGate;
      ctx.result({ gate: retried }, gateLine(retried));
      return ExitCode.Ok;
    }),
  );

  // Why a gate decided: every analysis measurement (resolved query, values, condition, verdict) and every attempt.
  addCommonOptions(gateCommand(rollout, 'gate', "Print a staged rollout's gate with its latest attempts and analysis runs, every measurement of them")).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const { gate } = ctx.flags<{ gate: string }>();
      let found = true;
      const report = await gateWithEveryMeasurement(async (first, after) => {
        const data = await ctx.client.request(GATE_MEASUREMENTS_QUERY, { id, gate, first, after });
        found = data.rollout !== null && data.rollout !== undefined;
        return data.rollout?.gate;
      });
      if (!found) throw new RemoteError(ErrorCode.NotFound, `rollout ${id} not found`);
      if (!report) throw new RemoteError(ErrorCode.NotFound, `rollout ${id} has no open gate ${gate}`);
      ctx.result({ gate: report }, formatGate(report));
      return ExitCode.Ok;
    }),
  );

  addCommonOptions(
    addWaitOptions(
      addCauseOptions(
        rollout
          .command('rollback')
          .description('Start a rollout that returns every changed target to its previous version')
          .argument('<id>', 'the rollout to roll back', rolloutId)
          .option('--reason <text>', 'why (recorded as the cause message)', flags.text(1024)),
      ),
    ),
  ).action(
    clientAction(io, setExitCode, async (ctx, id: string) => {
      const options = ctx.flags<CauseOptions & WaitOptions & { reason?: string }>();
      const cause = causeFrom(ctx.ci, { ...options, ...(options.reason !== undefined && options.message === undefined ? { message: options.reason } : {}) });
      const key = idempotencyKeyFor(ctx.ci, options, 'rollback', id, false);
      const input = { ...(cause ? { cause } : {}), ...(key ? { idempotencyKey: key } : {}) };
      const data = await ctx.client.request(ROLLBACK_MUTATION, { id, input });
      if (options.wait && !ctx.json) ctx.info(`rollback rollout ${data.rollbackRollout.id} started`);
      return finishWith(ctx, data.rollbackRollout, options);
    }),
  );
}
