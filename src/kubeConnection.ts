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
        throw new UnavailableError(`Kubernetes API ${kubeConfig.getCurrentCluster()?.server ?? ''} unreachable: ${(error as Error).message}`, { cause: error });
      }
    },
    stop,
  };
}
