/**
 * The embedded Kubernetes simulator: an in-memory object store, the Kubernetes HTTP API over it on loopback, the
 * simulated cluster behaviour (scheduler, kubelets, workload controllers) and an optional fleet, plus a kubeconfig
 * file so that kubectl and @kubernetes/client-node reach it like any cluster.
 *
 * Custom resources are served from installed CustomResourceDefinitions, with their structural schemas applied on every
 * write (pruning, defaulting, validation: src/sim/crd, ADR 13). The project's CRDs for IPPool, VirtualCluster,
 * ClusterVersion and NetworkAttachmentDefinition (src/sim/crds, matching upstream) are installed at start, as the
 * upstream charts install them, also for the `empty` fleet; `crds: false` starts a bare API without them.
 *
 * Where the API deliberately differs from a real API server (so tests do not lean on these):
 * - no authentication or authorization (any token); of admission, only what Kubernetes always runs (src/sim/admission,
 *   ADR 14: namespace lifecycle, ServiceAccounts, pod update rules, Secret and ConfigMap rules, names and labels), and
 *   validating webhooks served by simulated programs behind Services (ADR 33; no mutating webhooks, no `url` webhooks);
 *   built-in kinds get no schema validation beyond that (their OpenAPI documents are open);
 * - a CRD is established at once (no NamesAccepted/Established delay); only its storage version (or first served one)
 *   is served, without conversion; deleting it removes its objects at once, finalizers or not, then ends the watches
 *   on its type; CEL rules (`x-kubernetes-validations`) outside a small subset (celRules.ts) are not evaluated; on a
 *   schema change stored objects are re-pruned and re-defaulted in place (same resourceVersion, no watch event)
 *   instead of on each read; the ServiceMonitor and PrometheusRule kinds are built in, not CRDs;
 * - garbage collection is synchronous inside the delete call; Foreground deletion removes the owner right after
 *   starting its dependents' deletion instead of waiting for them; a deleted namespace takes its content at once
 *   (it stays Terminating only while metadata finalizers hold it);
 * - server-side apply treats lists without a known merge key (listKeys.ts) as atomic and has no CSA→SSA migration;
 * - strategic merge patch knows the merge keys in listKeys.ts only; custom resources refuse it (415) as upstream.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { agentMetricsRoute } from './agentMetrics.js';
import { ApiServer } from './api/ApiServer.js';
import { startBehaviour, type Behaviour, type BehaviourOptions } from './behaviour/index.js';
import { FaultInjector, type FaultConfigInput } from './faults.js';
import { installProjectCrds } from './crds/index.js';
import { applyFleet, resolveFleet } from './fleet.js';
import { mergeSelections, type UpstreamSelection } from './behaviour/upstream/index.js';
import { writeKubeconfig } from './kubeconfig.js';
import { MemoryStore } from './store/MemoryStore.js';
import type { ApiHooks } from './types.js';

export { ApiServer } from './api/ApiServer.js';
export { MemoryStore } from './store/MemoryStore.js';
export { Resources } from './store/resources.js';
export { SimApiError } from './store/errors.js';
export { SIM_CONTEXT } from './kubeconfig.js';

/** The subset of a pino logger the simulator uses. */
export interface SimLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export type FleetOption = Parameters<typeof applyFleet>[1];

export interface SimulatorOptions extends BehaviourOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Where the kubeconfig goes; default a fresh temp dir. */
  kubeconfigPath?: string;
  /** Objects to create at start (see src/sim/fleet.ts); none by default. */
  fleet?: FleetOption;
  /**
   * Upstream controllers to install, as the fleet option `upstream=...` does (merged with it): vm-dhcp-controller's
   * chart, the CAPN vc-manager, the cloud-api-adaptor chart. See src/sim/behaviour/upstream.
   */
  upstream?: UpstreamSelection;
  /**
   * Install the project's CustomResourceDefinitions at start (src/sim/crds): default true. False leaves a bare API
   * where IPPools and the rest are not served until someone applies their CRDs (e.g. the files in ../shared/upstream).
   */
  crds?: boolean;
  /**
   * Image globs whose agents run Ready but degraded in the metrics of `GET /metrics` (src/sim/agentMetrics.ts).
   * Default `['*:degraded*']`.
   */
  degradedImagePatterns?: string[];
  /** One image glob that fails to pull; shorthand for `badImagePatterns: [pattern]`. */
  badImagePattern?: string;
  /** Run the simulated kubelets and controllers (default true); false serves a bare API over the store. */
  behaviour?: boolean;
  /** Past events kept for watch resume (default 10,000). */
  historySize?: number;
  /** How often watches that allow bookmarks get one (default 30 s). */
  bookmarkIntervalMs?: number;
  /** Fault-injection hooks of the API server (also settable later through `simulator.api.hooks`). */
  hooks?: ApiHooks;
  /** Faults from the start (latency, error and conflict rates, watch drops); changeable later via `simulator.faults`
   * or `PUT /sim/admin/faults`. Ignored for the hooks that `hooks` sets itself. */
  faults?: FaultConfigInput;
  logger?: SimLogger;
}

export interface Simulator {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly kubeconfigPath: string;
  /** A client-node KubeConfig loaded from `kubeconfigPath`. */
  readonly kubeConfig: KubeConfig;
  readonly store: MemoryStore;
  /** The HTTP server: `hooks` for fault injection, `dropWatches()`. */
  readonly api: ApiServer;
  /** Undefined when started with `behaviour: false`. */
  readonly behaviour: Behaviour | undefined;
  /** Node crash/recovery; undefined when started with `behaviour: false`. */
  readonly nodes: Behaviour['nodes'] | undefined;
  /** Fault injection and the /sim/admin endpoint (see src/sim/faults.ts). */
  readonly faults: FaultInjector;
  stop(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const logger = options.logger;
  const store = new MemoryStore({
    ...(options.historySize !== undefined ? { historySize: options.historySize } : {}),
    onListenerError: (error) => logger?.error({ err: error }, 'simulator: a store subscriber failed'),
  });
  const api = new ApiServer({
    store,
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.bookmarkIntervalMs !== undefined ? { bookmarkIntervalMs: options.bookmarkIntervalMs } : {}),
    ...(options.hooks !== undefined ? { hooks: options.hooks } : {}),
    onInternalError: (error, request) => logger?.error({ err: error, request }, 'simulator: API request failed'),
  });
  const url = await api.start();
  let behaviour: Behaviour | undefined;
  let faults: FaultInjector | undefined;
  let tempDir: string | undefined;
  try {
    if (options.behaviour !== false) {
      const behaviourOptions: BehaviourOptions = { ...options };
      if (options.badImagePattern !== undefined) {
        behaviourOptions.badImagePatterns = [options.badImagePattern, ...(options.badImagePatterns ?? [])];
      }
      if (!behaviourOptions.onError && logger) {
        behaviourOptions.onError = (controller, key, error) => logger.warn({ controller, key, err: error }, 'simulator: a simulated controller keeps failing');
      }
      behaviour = startBehaviour(store, behaviourOptions);
    }
    faults = new FaultInjector(options.faults ?? {}, { api, nodes: behaviour?.nodes });
    // GET /metrics: what the fleet's agents export (src/sim/agentMetrics.ts); then the admin routes.
    const metrics = agentMetricsRoute(store, {
      ...(options.degradedImagePatterns ? { degradedImagePatterns: options.degradedImagePatterns } : {}),
      ...(options.scheduler ? { now: () => options.scheduler!.now() } : {}),
    });
    const faultHooks = faults.hooks();
    api.hooks = { ...faultHooks, extraRoute: async (req, res) => metrics(req, res) || (await faultHooks.extraRoute!(req, res)), ...options.hooks };
    if (options.crds !== false) installProjectCrds(store);
    if (options.upstream !== undefined) {
      const size = resolveFleet(options.fleet ?? 'empty');
      await applyFleet(store, { ...size, upstream: mergeSelections(size.upstream, options.upstream) });
    } else if (options.fleet !== undefined) await applyFleet(store, options.fleet);
    // A kubeconfig in a temp dir of our own is removed on stop; one at a caller's path is left for the caller.
    tempDir = options.kubeconfigPath ? undefined : await mkdtemp(join(tmpdir(), 'rollplane-sim-'));
    const kubeconfigPath = await writeKubeconfig({ server: url, path: options.kubeconfigPath ?? join(tempDir!, 'kubeconfig') });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    logger?.info({ url, kubeconfigPath }, 'simulator: Kubernetes API listening');
    return {
      url,
      kubeconfigPath,
      kubeConfig,
      store,
      api,
      behaviour,
      nodes: behaviour?.nodes,
      faults,
      async stop() {
        faults?.stop();
        behaviour?.stop();
        await api.stop();
        if (tempDir) await rm(tempDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    faults?.stop();
    behaviour?.stop();
    await api.stop();
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
}
