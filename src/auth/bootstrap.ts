import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { TokenService } from './TokenService.js';

/**
 * At start: `ROLLPLANE_ADMIN_TOKEN` creates or rotates the `admin` token; otherwise the first start with
 * authentication on creates one and prints it once on stderr (it is stored only as a hash). With authentication off
 * nothing needs a token, so none is made (the start-up banner says authentication is off): the first start that turns
 * it on prints one.
 */
export async function bootstrapAdminToken(config: Config, tokens: TokenService, logger: Logger): Promise<void> {
  if (config.auth.adminToken) {
    if (config.auth.adminToken.source === 'flag') {
      logger.warn('--admin-token on the command line is visible to every local user (ps, /proc); use ROLLPLANE_ADMIN_TOKEN or --admin-token-file');
    }
    if (await tokens.ensureAdmin(config.auth.adminToken.value)) logger.info('admin token set from configuration');
    else logger.error('the configured admin token was revoked and stays revoked; configure a new secret to rotate it');
  } else if (config.auth.enabled) {
    const secret = await tokens.bootstrapAdmin();
    if (secret) {
      process.stderr.write(
        `\nrollplane: first start: created the admin API token (shown only now, stored as a hash):\n\n    ${secret}\n\n` +
          `  use it as "Authorization: Bearer <token>"; create others with \`rollplane token create NAME --role deployer\`.\n\n`,
      );
    }
  }
}
