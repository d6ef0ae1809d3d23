import { createServer } from 'node:net';
import { type Config, loadConfig } from './config.js';
import { isAppError } from './errors.js';
import { type App, startApp } from './app.js';
import { createLogger } from './log.js';

/** `rollplane serve` / `npm start`: load configuration, start, and shut down cleanly on SIGTERM or SIGINT. */
export async function serve(argv: readonly string[]): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env, argv, { isTty: process.stdout.isTTY === true });
  } catch (error) {
    process.stderr.write(`rollplane: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const logger = createLogger(config.logLevel, config.logFormat);
  let app: App;
  try {
    // A port in use is found before anything starts (the simulator, migrations), and said in one line.
    await probePort(config.host, config.port);
    app = await startApp(config, { logger });
  } catch (error) {
    const portProblem = listenFailure(error, config);
    if (!portProblem) logger.fatal({ err: error }, 'failed to start');
    process.stderr.write(`rollplane: failed to start: ${portProblem ?? (isAppError(error) || error instanceof Error ? error.message : String(error))}\n`);
    process.exit(1);
  }
  process.stdout.write(startBanner(app));

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'signal received');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    app.stop().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

/**
 * What a person starting the service needs, once: where it listens (the first line, which scripts read), the web UI,
 * which Kubernetes it drives, where the history is, and whether it asks for tokens.
 */
export function startBanner(app: Pick<App, 'url' | 'config' | 'kube'>): string {
  const { config, kube } = app;
  const ui = app.url.replace(/\/graphql$/, '/');
  const history =
    kube.mode === 'sim' && config.databaseUrl.startsWith('file:')
      ? `${config.databaseUrl} (kept across restarts; the embedded simulator starts afresh on every start, so the history may name objects it no longer has)`
      : config.databaseUrl.startsWith('file:')
        ? config.databaseUrl
        : 'PostgreSQL (DATABASE_URL)';
  const auth = config.auth.enabled
    ? 'on: send "Authorization: Bearer <token>"'
    : `off: anyone who can reach ${config.host} may call the API (loopback only; --auth on requires tokens)`;
  return [
    `rollplane listening on ${app.url}`,
    `  web UI      ${ui}`,
    `  Kubernetes  ${kube.describe()}`,
    `  history     ${history}`,
    `  auth        ${auth}`,
    '',
  ].join('\n');
}

/** Resolves when `port` can be bound on `host` now (port 0 always can). */
function probePort(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** One line for a port that cannot be bound, or undefined for any other failure. */
export function listenFailure(error: unknown, config: Pick<Config, 'host' | 'port'>): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = `port ${config.port} on ${config.host}`;
  if (code === 'EADDRINUSE') return `${where} is already in use: stop what uses it, or choose another port with --port (or PORT)`;
  if (code === 'EACCES') return `${where} needs privileges this process lacks: choose a port above 1023 with --port (or PORT)`;
  if (code === 'EADDRNOTAVAIL') return `${config.host} is not an address of this machine: choose another with --host (or HOST)`;
  return undefined;
}
