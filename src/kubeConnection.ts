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
  /** The simulated member clusters started beside the embedded simulator (ROLLPLANE_SIM_MEMBER_CLUSTERS), to register. */
  simulatedMembers?: readonly SimulatedMember[];
  /** Sim mode: where the simulators serve their agents' metrics (`GET /metrics`), job `local` or the member's name. */
  simulatorMetrics?: readonly { url: string; job: string }[];
  /** Resolves when the API server answers /version; rejects with the reason otherwise. */
  check(): Promise<void>;
  /** Which Kubernetes this is, for people: the simulator, or the context, its server and the kubeconfig it came from. */
  describe(): string;
  /** Stops the embedded simulator, if any. */
  stop(): Promise<void>;
}

/** A simulated member cluster as the credentials file registers it: its kubeconfig text holds a loopback token. */
export interface SimulatedMember {
  name: string;
  labels: Readonly<Record<string, string>>;
  kubeconfig: string;
}

export async function connectKubernetes(config: Config, logger: Logger): Promise<KubeConnection> {
  const kubeConfig = new KubeConfig();
  let stop = async () => {};
  let kubeconfigPath: string | undefined;
  let simulatedMembers: SimulatedMember[] | undefined;
  let simulatorMetrics: { url: string; job: string }[] | undefined;
  switch (config.kube.mode) {
    case 'sim': {
      // Imported lazily: a process driving a real cluster never loads the simulator.
      const { startSimulator } = await import('./sim/index.js');
      const sim = await startSimulator({
        ...(config.sim.fleet === 'empty' ? {} : { fleet: config.sim.fleet }),
        logger: logger.child({ component: 'sim' }),
      });
      kubeconfigPath = sim.kubeconfigPath;
      simulatorMetrics = [{ url: sim.url, job: 'local' }];
      kubeConfig.loadFromFile(sim.kubeconfigPath);
      stop = () => sim.stop();
      logger.info({ kubeconfig: sim.kubeconfigPath, url: sim.url, fleet: config.sim.fleet }, 'embedded Kubernetes simulator started');
      if (config.sim.memberClusters === 'demo') {
        const { DEMO_MEMBER_CLUSTERS, startSimulatedClusters } = await import('./sim/simulatedClusters.js');
        const members = await startSimulatedClusters({
          clusters: DEMO_MEMBER_CLUSTERS,
          adminPort: 0,
          logger: logger.child({ component: 'sim-members' }),
        }).catch(async (error: unknown) => {
          await sim.stop();
          throw error;
        });
        simulatedMembers = [...members.clusters.values()].map(({ name, labels, kubeconfig }) => ({ name, labels, kubeconfig }));
        simulatorMetrics.push(...[...members.clusters.values()].map((m) => ({ url: m.simulator.url, job: m.name })));
        stop = async () => {
          await members.stop();
          await sim.stop();
        };
        logger.info(
          { clusters: simulatedMembers.map((m) => m.name), kubeconfig: members.kubeconfigPath, admin: members.adminUrl },
          'simulated member clusters started (PUT <admin>/sim/clusters/<name> {"state":"unreachable"} and so on)',
        );
      }
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
    ...(simulatedMembers ? { simulatedMembers } : {}),
    ...(simulatorMetrics ? { simulatorMetrics } : {}),
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
    describe() {
      if (config.kube.mode === 'sim') return `the embedded simulator (fleet ${config.sim.fleet}), KUBECONFIG=${kubeconfigPath}`;
      const server = kubeConfig.getCurrentCluster()?.server ?? 'no server';
      if (config.kube.mode === 'in-cluster') return `in-cluster (${server}, this pod's service account)`;
      return `context "${kubeConfig.getCurrentContext()}" (${server}) from ${config.kube.kubeconfigPath}`;
    },
    stop,
  };
}

/**
 * A cluster given by kubeconfig or in-cluster must answer before the service starts: otherwise the informers wait for
 * it forever and the service never listens. Fails after `timeoutMs` with what it tried and how to choose another.
 */
export async function requireReachable(kube: KubeConnection, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UnavailableError(`the Kubernetes API did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    await Promise.race([kube.check(), timeout]);
  } catch (error) {
    throw new UnavailableError(
      `cannot reach Kubernetes: ${kube.describe()}: ${(error as Error).message}. ` +
        'Choose another with --kube sim (the embedded simulator), --kubeconfig FILE or a kubeconfig context.',
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** A socket error code (ECONNREFUSED …) or the HTTP status the API server answered, from the error or its causes. */
export function failureCode(error: unknown, depth = 0): string | undefined {
  if (depth > 5 || typeof error !== 'object' || error === null) return undefined;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  if (typeof code === 'number' && code >= 400 && code < 600) return `HTTP ${code}`;
  return failureCode(cause, depth + 1);
}

/** How long a cluster given by kubeconfig or in-cluster may take to answer at start before the service gives up. */
const KUBE_REACHABLE_TIMEOUT_MS = 15_000;

/**
 * Connects (starting the simulator in sim mode) and, for a real cluster, waits for it to answer; on failure stops what
 * it started. The connection's /readyz check logs the detail and answers without the server's address.
 */
export async function startKubernetes(config: Config, logger: Logger): Promise<KubeConnection & { readiness: { name: string; check(): Promise<void> } }> {
  const kube = await connectKubernetes(config, logger);
  try {
    if (kube.mode !== 'sim') await requireReachable(kube, KUBE_REACHABLE_TIMEOUT_MS);
  } catch (error) {
    await kube.stop();
    throw error;
  }
  logger.info({ kubernetes: kube.describe() }, 'Kubernetes API reachable');
  const readiness = {
    name: 'kubernetes',
    check: () =>
      kube.check().catch((error: unknown) => {
        logger.warn({ err: (error as Error).cause ?? error, server: kube.kubeConfig.getCurrentCluster()?.server }, `readiness: ${(error as Error).message}`);
        throw error;
      }),
  };
  return { ...kube, readiness };
}
