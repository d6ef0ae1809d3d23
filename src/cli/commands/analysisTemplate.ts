import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { table } from '../format.js';
import {
  ANALYSIS_TEMPLATES_QUERY,
  CREATE_ANALYSIS_TEMPLATE_MUTATION,
  DELETE_ANALYSIS_TEMPLATE_MUTATION,
  UPDATE_ANALYSIS_TEMPLATE_MUTATION,
} from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

/**
 * `rollplane analysis-template list | create | update | delete` (issue 33, docs/analysis.md): analysis templates stored
 * by name, which an ANALYSIS gate or a rollout's `strategy.analysis` names with `templateName`. The server checks a
 * template as it checks an inline one and names the bad field.
 */
export function registerAnalysisTemplate(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const command = program
    .command('analysis-template')
    .description('Analysis templates stored by name: list them (any token), create, update and delete them (deployer token)');

  addCommonOptions(command.command('list'))
    .description('List the stored analysis templates: name, metrics, last change')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const data = await ctx.client.request(ANALYSIS_TEMPLATES_QUERY, {});
        const rows = data.analysisTemplates.map((t) => [t.name, t.metrics.join(', '), String(t.updatedAt)]);
        ctx.result({ analysisTemplates: data.analysisTemplates }, rows.length === 0 ? 'no analysis templates' : table(['NAME', 'METRICS', 'UPDATED'], rows));
        return ExitCode.Ok;
      }),
    );

  for (const verb of ['create', 'update'] as const) {
    addCommonOptions(command.command(verb))
      .description(verb === 'create' ? 'Store an analysis template under a name' : 'Replace the analysis template of that name (launched rollouts keep theirs)')
      .argument('<name>', 'the template name (a DNS-1123 subdomain)', flags.dnsSubdomain)
      .requiredOption('--file <file>', 'the AnalysisTemplate, JSON or YAML (docs/analysis.md)', flags.analysisTemplateFile)
      .action(
        clientAction(io, setExitCode, async (ctx, name: string) => {
          const input = { name, template: ctx.flags<{ file: unknown }>().file };
          const written =
            verb === 'create'
              ? (await ctx.client.request(CREATE_ANALYSIS_TEMPLATE_MUTATION, { input })).createAnalysisTemplate
              : (await ctx.client.request(UPDATE_ANALYSIS_TEMPLATE_MUTATION, { input })).updateAnalysisTemplate;
          ctx.result(
            { analysisTemplate: written },
            `${verb === 'create' ? 'created' : 'updated'} analysis template ${written.name} (${written.metrics.join(', ')})`,
          );
          return ExitCode.Ok;
        }),
      );
  }

  addCommonOptions(command.command('delete'))
    .description('Delete an analysis template (launched rollouts keep theirs)')
    .argument('<name>', 'the template name', flags.dnsSubdomain)
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const data = await ctx.client.request(DELETE_ANALYSIS_TEMPLATE_MUTATION, { name });
        ctx.result({ analysisTemplate: data.deleteAnalysisTemplate }, `deleted analysis template ${data.deleteAnalysisTemplate.name}`);
        return ExitCode.Ok;
      }),
    );
}
