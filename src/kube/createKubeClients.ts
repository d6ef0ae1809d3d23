import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Clock } from '../util/clock.js';
import { AppError, ErrorCode } from '../errors.js';
import { ApiBudget } from './ApiBudget.js';
import { JsonRequests, routeHotWrites } from './jsonRequests.js';
import { JsonWatch } from './jsonWatch.js';
import { type NoteRequest, sendRetryingReset } from './resetRetry.js';
import { timeoutSignal } from '../util/boundedSignal.js';

export type KubeMode = 'sim' | 'kubeconfig' | 'in-cluster';

export interface KubeClientConfig {
  /**
   * `sim`: the kubeconfig file the embedded simulator wrote (`kubeconfigPath` required);
   * `kubeconfig`: `kubeconfigPath`, else $KUBECONFIG, else ~/.kube/config (client-node's loadFromDefault);
   * `in-cluster`: the pod's service account.
   */
  mode: KubeMode;
  kubeconfigPath?: string;
  /** Context to use instead of the kubeconfig's current-context. */
  context?: string;
  /** Client-side rate limit shared by every request; default ROLLPLANE_KUBE_QPS's and ROLLPLANE_KUBE_BURST's. */
  qps?: number;
  burst?: number;
  /** Every request but a watch is aborted after this long; default: never (ROLLPLANE_KUBE_TIMEOUT_MS sets it). */
  requestTimeoutMs?: number;
  registry?: Registry;
  clock?: Clock;
}

/**
 * A KubeConfig whose every request first takes a token from the API budget. The typed APIs authenticate each request
 * through `applySecurityAuthentication`; Watch (and log, exec, metrics) build theirs through `applyToHTTPSOptions`
 * (via `applyToFetchOptions`). Those are the two doors every client-node request goes through, so the budget sits
 * there rather than in per-client middleware that a new call site could forget.
 */
export class BudgetedKubeConfig extends KubeConfig {
  budget: ApiBudget = new ApiBudget();

  /**
   * Every request but a watch is aborted after this long (`local`: ROLLPLANE_KUBE_TIMEOUT_MS); undefined: never. A
   * hung write to `local` kept a rollout PENDING, and every agent-pool bump behind it, for ever (attack 18, H3).
   */
  requestTimeoutMs: number | undefined;

  override async applySecurityAuthentication(context: Parameters<KubeConfig['applySecurityAuthentication']>[0]): Promise<void> {
    await this.budget.take();
    await super.applySecurityAuthentication(context);
    // After the budget's wait: the timer starts when the request is sent. A signal the caller set stays.
    if (context.getSignal()) return;
    const signal = this.requestSignal();
    if (signal) context.setSignal(signal);
  }

  override async applyToHTTPSOptions(opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0]): Promise<void> {
    await this.budget.take();
    return super.applyToHTTPSOptions(opts);
  }

  /**
   * What bounds one request that is not a watch, taken when it is sent (after the budget's wait): `requestTimeoutMs`
   * for `local`; a member cluster's own request timeout (src/clusters/MemberKubeConfig.ts). The plain JSON path
   * (jsonRequests.ts) asks for it, since it does not pass through applySecurityAuthentication.
   */
  requestSignal(): AbortSignal | undefined {
    return this.requestTimeoutMs === undefined ? undefined : timeoutSignal(this.requestTimeoutMs);
  }

  /**
   * Whether a safe request that a reset of a reused connection failed is sent once more (resetRetry.ts): a member
   * cluster's are (src/clusters/MemberKubeConfig.ts, ADR 0073); `local`'s are sent once, as they always were.
   */
  get retriesResets(): boolean {
    return false;
  }

  /** Sends one request through `attempt`, once more after a reset when `retriesResets` says so. */
  sendRequest<T>(method: string, url: string, attempt: (note: NoteRequest) => Promise<T>): Promise<T> {
    return this.retriesResets ? sendRetryingReset(method, url, attempt, () => this.budget.take()) : attempt(() => {});
  }
}

/**
 * client-node 1.4 builds a new http(s).Agent for every request, so every call opens (and closes) a TCP connection —
 * measurable in a profile of a 1,000-pool rollout. Its private `createAgent` is replaced on the instance by one that
 * keeps one keep-alive agent per distinct cluster and TLS settings. Returns what closes those agents' sockets, for a
 * KubeConfig that goes away before the process does (a member cluster's, src/clusters).
 */
export function reuseConnections(kubeConfig: KubeConfig): () => void {
  const target = kubeConfig as unknown as { createAgent: (cluster: unknown, options: Record<string, unknown>) => unknown };
  const create = target.createAgent.bind(kubeConfig);
  const agents = new Map<string, unknown>();
  target.createAgent = (cluster, options) => {
    const c = (cluster ?? {}) as { server?: string; proxyUrl?: string };
    const key = JSON.stringify([
      c.server,
      c.proxyUrl,
      options.rejectUnauthorized,
      options.servername,
      String(options.ca ?? ''),
      String(options.cert ?? ''),
      String(options.key ?? ''),
    ]);
    let agent = agents.get(key);
    if (!agent) {
      agent = create(cluster, { ...options, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
  return () => {
    for (const agent of agents.values()) (agent as { destroy(): void }).destroy();
    agents.clear();
  };
}

export interface KubeClients {
  kubeConfig: BudgetedKubeConfig;
  budget: ApiBudget;
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  custom: CustomObjectsApi;
  objects: KubernetesObjectApi;
  watch: Watch;
}

export function loadKubeConfig(config: KubeClientConfig): BudgetedKubeConfig {
  const kc = new BudgetedKubeConfig();
  switch (config.mode) {
    case 'sim':
      if (!config.kubeconfigPath) throw new AppError(ErrorCode.Internal, 'kube mode "sim" needs the kubeconfig path the simulator wrote');
      kc.loadFromFile(config.kubeconfigPath);
      break;
    case 'kubeconfig':
      if (config.kubeconfigPath) kc.loadFromFile(config.kubeconfigPath);
      else kc.loadFromDefault();
      break;
    case 'in-cluster':
      kc.loadFromCluster();
      // client-node builds "https://undefined:undefined" outside a pod instead of failing.
      if (kc.getCurrentCluster()?.server.includes('undefined')) {
        throw new AppError(ErrorCode.Unavailable, 'kube mode "in-cluster" needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (not running in a pod?)');
      }
      break;
    default: {
      const never: never = config.mode;
      throw new AppError(ErrorCode.Internal, `unknown kube mode ${String(never)}`);
    }
  }
  if (config.context) kc.setCurrentContext(config.context);
  if (!kc.getCurrentCluster()) throw new AppError(ErrorCode.Unavailable, `no Kubernetes cluster configured (mode ${config.mode})`);
  reuseConnections(kc);
  return kc;
}

/** Builds every client rollplane uses from one KubeConfig, all behind one API budget. */
export function createKubeClients(config: KubeClientConfig): KubeClients {
  const kubeConfig = loadKubeConfig(config);
  kubeConfig.budget = new ApiBudget({ qps: config.qps, burst: config.burst, clock: config.clock, registry: config.registry });
  kubeConfig.requestTimeoutMs = config.requestTimeoutMs;
  return kubeClientsOf(kubeConfig);
}

/** The clients of a loaded KubeConfig, on its budget (a member cluster's connection has its own: src/clusters). */
export function kubeClientsOf(kubeConfig: BudgetedKubeConfig): KubeClients {
  const budget = kubeConfig.budget;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  // The per-target writes of a rollout skip client-node's generated path (jsonRequests.ts, ADR 0047), and watches
  // read their stream without node-fetch and readline (jsonWatch.ts, ADR 0062).
  const plain = JsonRequests.applies(kubeConfig);
  if (plain) routeHotWrites(core, custom, new JsonRequests(kubeConfig));
  return {
    kubeConfig,
    budget,
    core,
    apps: kubeConfig.makeApiClient(AppsV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    custom,
    objects: KubernetesObjectApi.makeApiClient(kubeConfig),
    watch: plain ? new JsonWatch(kubeConfig) : new Watch(kubeConfig),
  };
}
