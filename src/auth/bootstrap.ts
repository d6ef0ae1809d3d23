import type { IncomingMessage } from 'node:http';
import { getOperationAST, parse } from 'graphql';
import type { Config } from '../config.js';
import type { AuditLog } from '../domain/AuditLog.js';
import type { Logger } from '../log.js';
import type { TokenService } from './TokenService.js';

/**
 * At start: `ROLLPLANE_ADMIN_TOKEN` creates or rotates the `admin` token; otherwise the very first start creates one
 * and prints it once on stderr (it is stored only as a hash). Warns when authentication is off.
 */
export async function bootstrapAdminToken(config: Config, tokens: TokenService, logger: Logger): Promise<void> {
  if (config.auth.adminToken) {
    await tokens.ensureAdmin(config.auth.adminToken);
    logger.info('admin token set from ROLLPLANE_ADMIN_TOKEN');
  } else {
    const secret = await tokens.bootstrapAdmin();
    if (secret) {
      process.stderr.write(
        `\nrollplane: first start: created the admin API token (shown only now, stored as a hash):\n\n    ${secret}\n\n` +
          `  use it as "Authorization: Bearer <token>"; create others with \`rollplane token create NAME --role deployer\`.\n\n`,
      );
    }
  }
  if (!config.auth.enabled) {
    logger.warn({ host: config.host }, 'authentication is OFF (allowed only on a loopback address); set ROLLPLANE_AUTH=on to require tokens');
  }
}

/** Audits a mutation refused before GraphQL ran (no or bad token): the audit log lists refused mutations too. */
export async function auditRefusedMutation(audit: AuditLog, req: IncomingMessage, body: unknown, code: string, message: string, logger: Logger): Promise<void> {
  const request = (body && typeof body === 'object' ? body : {}) as { query?: unknown; operationName?: unknown; variables?: unknown };
  if (typeof request.query !== 'string') return;
  let operation;
  try {
    operation = getOperationAST(parse(request.query, { maxTokens: 10_000 }), typeof request.operationName === 'string' ? request.operationName : undefined);
  } catch {
    return; // not a parseable operation, so not a mutation either
  }
  if (operation?.operation !== 'mutation') return;
  const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : []));
  await audit
    .record({
      actor: null,
      role: null,
      operation: fields.join(',') || 'mutation',
      input: { operation: request.query.slice(0, 4000), variables: request.variables ?? {} },
      result: code,
      message,
      sourceAddr: req.socket.remoteAddress ?? null,
    })
    .catch((error: unknown) => logger.error({ err: error }, 'could not write the audit entry'));
}
