import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { table } from '../format.js';
import type { MaintenanceWindowInput } from '../generated/graphql.js';
import { CREATE_WINDOW_MUTATION, DELETE_WINDOW_MUTATION, UPDATE_WINDOW_MUTATION, WINDOWS_QUERY } from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

/** One policy's schedules, short: `weekly MON,TUE 22:00-02:00; cron 0 3 * * * for 2h; range … → …`. */
function schedulesText(definition: Record<string, unknown>): string {
  const weekly = (definition.weekly as { days: string[]; start: string; end: string }[] | undefined) ?? [];
  const cron = (definition.cron as { schedule: string; duration: string }[] | undefined) ?? [];
  const ranges = (definition.ranges as { from: string; to: string }[] | undefined) ?? [];
  return [
    ...weekly.map((w) => `weekly ${w.days.join(',')} ${w.start}-${w.end}`),
    ...cron.map((c) => `cron ${c.schedule} for ${c.duration}`),
    ...ranges.map((r) => `range ${r.from} → ${r.to}`),
  ].join('; ');
}

/**
 * `rollplane window list | create | update | delete` (issue 30, docs/waves.md): named maintenance-window policies. A
 * policy file is JSON or YAML holding a MaintenanceWindowInput (name, kind, timeZone, clusterSelector, weekly, cron,
 * ranges); the server checks it and names the bad field.
 */
export function registerWindow(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const window = program
    .command('window')
    .description('Maintenance-window policies: list them (any token), create, update and delete them (admin token required)');

  addCommonOptions(window.command('list'))
    .description('List the maintenance-window policies: kind, time zone, clusters and schedules')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const data = await ctx.client.request(WINDOWS_QUERY, {});
        const rows = data.maintenanceWindows.map((w) => {
          const d = w.definition as Record<string, unknown>;
          return [w.name, w.kind, String(d.timeZone ?? 'UTC'), String(d.clusterSelector ?? '(every cluster)'), schedulesText(d)];
        });
        ctx.result(
          { maintenanceWindows: data.maintenanceWindows },
          rows.length === 0 ? 'no maintenance-window policies' : table(['NAME', 'KIND', 'TIME ZONE', 'CLUSTERS', 'WINDOWS'], rows),
        );
        return ExitCode.Ok;
      }),
    );

  for (const verb of ['create', 'update'] as const) {
    addCommonOptions(window.command(verb))
      .description(verb === 'create' ? 'Create a policy from a JSON or YAML file' : 'Replace the policy of the same name from a JSON or YAML file')
      .requiredOption('--file <file>', 'the policy (MaintenanceWindowInput: name, kind, timeZone, clusterSelector, weekly, cron, ranges)', flags.policyFile)
      .action(
        clientAction(io, setExitCode, async (ctx) => {
          const input = ctx.flags<{ file: MaintenanceWindowInput }>().file;
          const written =
            verb === 'create'
              ? (await ctx.client.request(CREATE_WINDOW_MUTATION, { input })).createMaintenanceWindow
              : (await ctx.client.request(UPDATE_WINDOW_MUTATION, { input })).updateMaintenanceWindow;
          ctx.result({ maintenanceWindow: written }, `${verb === 'create' ? 'created' : 'updated'} ${written.kind} window policy ${written.name}`);
          return ExitCode.Ok;
        }),
      );
  }

  addCommonOptions(window.command('delete'))
    .description('Delete a policy')
    .argument('<name>', 'policy name', flags.dnsLabel)
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const data = await ctx.client.request(DELETE_WINDOW_MUTATION, { name });
        ctx.result({ maintenanceWindow: data.deleteMaintenanceWindow }, `deleted window policy ${data.deleteMaintenanceWindow.name}`);
        return ExitCode.Ok;
      }),
    );
}
