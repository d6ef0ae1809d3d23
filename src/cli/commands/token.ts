import { readPages } from '../pages.js';
import type { Command } from 'commander';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { formatTokens } from '../format.js';
import type { Role } from '../generated/graphql.js';
import { CREATE_TOKEN_MUTATION, REVOKE_TOKEN_MUTATION, TOKENS_QUERY } from '../operations.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

const tokenId = (raw: string): string => {
  if (raw.length === 0 || raw.length > 128 || /\s/.test(raw)) throw new flags.InvalidArgument('Expected a token id.');
  return raw;
};

export function registerToken(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const token = program.command('token').description('Manage API tokens (admin token required)');

  addCommonOptions(token.command('create'))
    .description('Create a token; its secret is printed once, on stdout (details on stderr)')
    .argument('<name>', 'unique name (DNS-1123 label)', flags.dnsLabel)
    .requiredOption('--role <role>', 'viewer, deployer or admin', flags.oneOf(['viewer', 'deployer', 'admin']))
    .option('--expires-in <duration>', 'lifetime, e.g. 30d or 12h (default: never expires)', flags.duration(60, 10 * 365 * 86_400))
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const { role, expiresIn } = ctx.flags<{ role: Role; expiresIn?: number }>();
        const data = await ctx.client.request(CREATE_TOKEN_MUTATION, {
          input: { name, role, ...(expiresIn !== undefined ? { expiresInSeconds: expiresIn } : {}) },
        });
        const created = data.createApiToken;
        if (!ctx.json) {
          ctx.info(
            `created token ${created.token.id} (${created.token.name}, ${created.token.role}${created.token.expiresAt ? `, expires ${created.token.expiresAt}` : ''}); store the secret now, it cannot be shown again`,
          );
        }
        ctx.result(created, created.secret);
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(token.command('list'))
    .description('List tokens (never their secrets)')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const { nodes: tokens } = await readPages(async (first, after) => (await ctx.client.request(TOKENS_QUERY, { first, after })).apiTokens, 100);
        ctx.result({ tokens }, formatTokens(tokens));
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(token.command('revoke'))
    .description('Revoke a token at once (its open subscriptions close)')
    .argument('<id>', 'token id', tokenId)
    .action(
      clientAction(io, setExitCode, async (ctx, id: string) => {
        const data = await ctx.client.request(REVOKE_TOKEN_MUTATION, { id });
        ctx.result({ token: data.revokeApiToken }, `revoked token ${data.revokeApiToken.id} (${data.revokeApiToken.name})`);
        return ExitCode.Ok;
      }),
    );
}
