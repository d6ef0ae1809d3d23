import { KubeConfig, VersionApi } from '@kubernetes/client-node';
import type { Config } from './config.js';
import { UnavailableError } from './errors.js';
import type { Logger } from './log.js';

/** How this process reaches Kubernetes: a real cluster, or the embedded simulator it started itself. */
export interface KubeConnection {
  mode: Config['kube']['mode'];
  kubeConfig: KubeConfig;
  /** Where the simulator's kubeconfig was written (sim mode only), so kubectl can be pointed at it. */
  kubeconfigPath?: string;
  /** Resolves when the API server answers /version; rejects with the reason otherwise. */
  check(): Promise<void>;
  /** Stops the embedded simulator, if any. */
  stop(): Promise<void>;
}

export async function connectKubernetes(config: Config, logger: Logger): Promise<KubeConnection> {
  const kubeConfig = new KubeConfig();
  let stop = async () => {};
  let kubeconfigPath: string | undefined;
  switch (config.kube.mode) {
    case 'sim': {
      // Imported lazily: a process driving a real cluster never loads the simulator.
      const { startSimulator } = await import('./sim/index.js');
      const sim = await startSimulator({
        ...(config.sim.fleet === 'empty' ? {} : { fleet: config.sim.fleet }),
        logger: logger.child({ component: 'sim' }),
      });
      kubeconfigPath = sim.kubeconfigPath;
      kubeConfig.loadFromFile(sim.kubeconfigPath);
      stop = () => sim.stop();
      logger.info({ kubeconfig: sim.kubeconfigPath, url: sim.url, fleet: config.sim.fleet }, 'embedded Kubernetes simulator started');
      break;
    }
    case 'kubeconfig':
      kubeConfig.loadFromFile(config.kube.kubeconfigPath!);
      break;
    case 'in-cluster':
      kubeConfig.loadFromCluster();
      break;
  }
  const versionApi = kubeConfig.makeApiClient(VersionApi);
  return {
    mode: config.kube.mode,
    kubeConfig,
    ...(kubeconfigPath ? { kubeconfigPath } : {}),
    async check() {
      try {
        await versionApi.getCode();
      } catch (error) {
        // /readyz answers anyone: say that it is unreachable and why in one code, never the API server's address (the
        // caller logs the detail, which stays in `cause`).
        const why = failureCode(error);
        throw new UnavailableError(`the Kubernetes API is unreachable${why ? ` (${why})` : ''}`, { cause: error });
      }
    },
    stop,
  };
}

/** A socket error code (ECONNREFUSED …) or the HTTP status the API server answered, from the error or its causes. */
function failureCode(error: unknown, depth = 0): string | undefined {
  if (depth > 5 || typeof error !== 'object' || error === null) return undefined;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  if (typeof code === 'number' && code >= 400 && code < 600) return `HTTP ${code}`;
  return failureCode(cause, depth + 1);
}
