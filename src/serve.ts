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
    app = await startApp(config, { logger });
  } catch (error) {
    logger.fatal({ err: error }, 'failed to start');
    process.stderr.write(`rollplane: failed to start: ${isAppError(error) || error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
  process.stdout.write(`rollplane listening on ${app.url}\n`);
  if (app.kube.kubeconfigPath) process.stdout.write(`embedded Kubernetes simulator: KUBECONFIG=${app.kube.kubeconfigPath}\n`);

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
