/**
 * Many simulated clusters in one process (docs/adr/0050-simulated-member-clusters.md): each its own simulator (store,
 * API server, behaviour, fleet and upstream controllers) behind its own front door (src/sim/clusterFrontDoor.ts), whose
 * state — ready, unreachable, blackhole, slow, unauthorized — is switched at run time by `set` or the admin endpoint:
 *   GET /sim/clusters          → every cluster: name, labels, url, kubeconfig file, state, latencyMs
 *   PUT /sim/clusters/<name>   → {"state": "slow", "latencyMs": 2000}: switches it, answers its new state
 *   GET /sim/clusters/<name>/audit?after=<seq> → the writes made through its API (AuditRecord: who, what, in order)
 * The admin endpoint listens on a port of its own, so it answers while every cluster is unreachable.
 *
 * Kubeconfigs, in `dir`: `kubeconfig` with a context per cluster (named after the cluster; kubectl --context edge-1),
 * and `clusters/<name>.kubeconfig` with that cluster alone (what a member registration holds: one cluster, one user).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { isDns1123Label, isLabelKey, isLabelValue, namesProblem } from '../util/dnsNames.js';
import type { UpstreamSelection } from './behaviour/upstream/index.js';
import type { SimDelays } from './behaviour/delays.js';
import { CLUSTER_STATES, ClusterFrontDoor, type ClusterState, type FrontDoorState } from './clusterFrontDoor.js';
import { type FleetOption, type SimLogger, type Simulator, startSimulator } from './index.js';
import { kubeconfigForClusters } from './kubeconfig.js';
import { readJson, send } from './faults.js';
import { isSimApiError, SimApiError } from './store/errors.js';

export { CLUSTER_STATES, type ClusterState, type FrontDoorState } from './clusterFrontDoor.js';

export interface SimulatedClusterSpec {
  /** A DNS-1123 label: the context's name, and the member cluster's name when registered. */
  name: string;
  /** The member cluster's labels when registered (`tier=edge`); the simulator itself does not use them. */
  labels?: Record<string, string>;
  /** The cluster's own fleet (src/sim/fleet.ts); empty when absent. */
  fleet?: FleetOption;
  upstream?: UpstreamSelection;
  /** Run its simulated kubelets and controllers (default true). */
  behaviour?: boolean;
  /** Overrides of its behaviour's delays (default: the simulator's, pods Ready in about 1.5 s); `zeroDelays` for benchmarks. */
  delays?: Partial<SimDelays>;
  /** Install the project's CRDs (default true); false serves a cluster without IPPools and VirtualClusters. */
  crds?: boolean;
}

export interface SimulatedClustersOptions {
  clusters: readonly SimulatedClusterSpec[];
  /** Where the kubeconfigs go; default a fresh temp dir, removed on stop. */
  dir?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Serve the admin endpoint on this port (0: any free one); no admin endpoint when absent. */
  adminPort?: number;
  /** Simulators started at once (default 32): a thousand clusters start without a thousand at a time. */
  concurrency?: number;
  logger?: SimLogger;
}

export interface SimulatedCluster {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The front door's URL: what the kubeconfigs name. */
  readonly url: string;
  /** `clusters/<name>.kubeconfig`, and its text (one context, the current one). */
  readonly kubeconfigPath: string;
  readonly kubeconfig: string;
  readonly simulator: Simulator;
  state(): FrontDoorState;
}

export interface SimulatedClusters {
  readonly clusters: ReadonlyMap<string, SimulatedCluster>;
  /** The kubeconfig with a context per cluster. */
  readonly kubeconfigPath: string;
  readonly dir: string;
  /** http://127.0.0.1:<port> of the admin endpoint, when started with `adminPort`. */
  readonly adminUrl: string | undefined;
  /** Switches a cluster's state (`latencyMs` for `slow`); resolves once its port is closed or open as needed. */
  set(name: string, state: ClusterState, latencyMs?: number): Promise<FrontDoorState>;
  stop(): Promise<void>;
}

/**
 * The embedded mode's edge clusters (ROLLPLANE_SIM_MEMBER_CLUSTERS=demo): two small Harvester-like clusters, each with
 * its own pools and vm-dhcp-controller, labelled as an edge fleet is.
 */
export const DEMO_MEMBER_CLUSTERS: readonly SimulatedClusterSpec[] = Object.freeze([
  { name: 'edge-1', labels: { tier: 'edge', region: 'eu-west' }, fleet: 'pools=2,nodes=2,peers=0,upstream=vm-dhcp' },
  { name: 'edge-2', labels: { tier: 'edge', region: 'us-east' }, fleet: 'pools=1,nodes=1,peers=0,upstream=vm-dhcp' },
]);

/** `demo`, a count N (`sim-1` … `sim-N`, at most 5,000) or names `a,b,c`, each of the last two with `fleet`. */
export function simulatedClusterSpecs(text: string, fleet: string): SimulatedClusterSpec[] {
  if (text === 'demo') return DEMO_MEMBER_CLUSTERS.map((spec) => ({ ...spec }));
  const count = /^\d+$/.test(text) ? Number(text) : undefined;
  if (count !== undefined && (count < 1 || count > 5_000)) throw new SimApiError(400, 'BadRequest', `a count of clusters is 1 to 5000 (got ${count})`);
  const names = count !== undefined ? Array.from({ length: count }, (_, i) => `sim-${i + 1}`) : text.split(',').map((name) => name.trim());
  const specs = names.map((name) => ({ name, labels: { 'rollplane.io/simulated': 'true' }, fleet }));
  checkClusterSpecs(specs);
  return specs;
}

const stateInput = z.strictObject({
  state: z.enum(CLUSTER_STATES),
  latencyMs: z.number().int().min(0).max(600_000).optional(),
});

/** Checks names (DNS-1123 labels, unique) and labels before anything starts. */
export function checkClusterSpecs(specs: readonly SimulatedClusterSpec[]): void {
  const seen = new Set<string>();
  for (const { name, labels } of specs) {
    const problem = namesProblem(isDns1123Label(name));
    if (problem) throw new SimApiError(400, 'BadRequest', `simulated cluster name "${name}": ${problem}`);
    if (seen.has(name)) throw new SimApiError(400, 'BadRequest', `simulated cluster "${name}" is given twice`);
    seen.add(name);
    for (const [key, value] of Object.entries(labels ?? {})) {
      const labelProblem = namesProblem([...isLabelKey(key), ...isLabelValue(value)]);
      if (labelProblem) throw new SimApiError(400, 'BadRequest', `simulated cluster "${name}", label ${key}: ${labelProblem}`);
    }
  }
}

export async function startSimulatedClusters(options: SimulatedClustersOptions): Promise<SimulatedClusters> {
  checkClusterSpecs(options.clusters);
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'rollplane-sim-clusters-')));
  await mkdir(join(dir, 'clusters'), { recursive: true, mode: 0o700 });
  const host = options.host ?? '127.0.0.1';
  const clusters = new Map<string, SimulatedCluster>();
  const doors = new Map<string, ClusterFrontDoor>();
  let admin: Server | undefined;

  const stop = async () => {
    if (admin) await new Promise<void>((resolve) => admin!.close(() => resolve()));
    await Promise.all([...doors.values()].map((door) => door.stop()));
    await Promise.all([...clusters.values()].map((cluster) => cluster.simulator.stop()));
    if (ownDir) await rm(dir, { recursive: true, force: true });
  };

  const startOne = async (spec: SimulatedClusterSpec) => {
    const simulator = await startSimulator({
      host,
      ...(spec.fleet !== undefined ? { fleet: spec.fleet } : {}),
      ...(spec.upstream !== undefined ? { upstream: spec.upstream } : {}),
      ...(spec.behaviour !== undefined ? { behaviour: spec.behaviour } : {}),
      ...(spec.delays !== undefined ? { delays: spec.delays } : {}),
      ...(spec.crds !== undefined ? { crds: spec.crds } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    const door = new ClusterFrontDoor(simulator.url, host);
    doors.set(spec.name, door);
    let url: string;
    try {
      url = await door.start();
    } catch (error) {
      await simulator.stop();
      throw error;
    }
    const kubeconfig = stringify(kubeconfigForClusters([{ name: spec.name, server: url }]));
    const kubeconfigPath = join(dir, 'clusters', `${spec.name}.kubeconfig`);
    clusters.set(spec.name, {
      name: spec.name,
      labels: { ...spec.labels },
      url,
      kubeconfigPath,
      kubeconfig,
      simulator,
      state: () => door.state(),
    });
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
  };

  try {
    const queue = [...options.clusters];
    const workers = Array.from({ length: Math.min(options.concurrency ?? 32, queue.length) }, async () => {
      for (let spec = queue.shift(); spec; spec = queue.shift()) await startOne(spec);
    });
    await Promise.all(workers);
    // In the order given, whichever started first.
    const ordered = options.clusters.map((spec) => clusters.get(spec.name)!);
    clusters.clear();
    for (const cluster of ordered) clusters.set(cluster.name, cluster);
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeFile(kubeconfigPath, stringify(kubeconfigForClusters(ordered.map(({ name, url }) => ({ name, server: url })))), { mode: 0o600 });

    const set = async (name: string, state: ClusterState, latencyMs?: number) => {
      const door = clusters.has(name) ? doors.get(name) : undefined;
      if (!door) throw new SimApiError(404, 'NotFound', `no simulated cluster "${name}"`);
      return door.set(state, latencyMs);
    };
    if (options.adminPort !== undefined) {
      admin = createServer((req, res) => {
        adminRoute(req, res, clusters, set).catch((error: unknown) => {
          const status = isSimApiError(error) ? error : new SimApiError(500, 'InternalError', String((error as Error)?.message ?? error));
          send(res, status.code, status.toStatus());
        });
      });
      await new Promise<void>((resolve, reject) => {
        admin!.once('error', reject);
        admin!.listen(options.adminPort, host, () => resolve());
      });
    }
    const adminUrl = admin ? `http://${host}:${(admin.address() as AddressInfo).port}` : undefined;
    options.logger?.info({ clusters: clusters.size, kubeconfigPath, adminUrl }, 'simulator: simulated clusters listening');
    return { clusters, kubeconfigPath, dir, adminUrl, set, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function adminRoute(
  req: IncomingMessage,
  res: ServerResponse,
  clusters: ReadonlyMap<string, SimulatedCluster>,
  set: SimulatedClusters['set'],
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://sim').pathname.replace(/\/+$/, '');
  const method = req.method ?? 'GET';
  if (path === '/sim/clusters' && method === 'GET') {
    send(
      res,
      200,
      [...clusters.values()].map(({ name, labels, url, kubeconfigPath, state }) => ({ name, labels, url, kubeconfigPath, ...state() })),
    );
    return;
  }
  const audit = /^\/sim\/clusters\/([^/]+)\/audit$/.exec(path);
  if (audit && method === 'GET') {
    const cluster = clusters.get(decodeURIComponent(audit[1]!));
    if (!cluster) throw new SimApiError(404, 'NotFound', `no simulated cluster "${decodeURIComponent(audit[1]!)}"`);
    const after = Number(new URL(req.url ?? '/', 'http://sim').searchParams.get('after') ?? 0);
    send(
      res,
      200,
      cluster.simulator.api.audit.filter((record) => record.seq > after),
    );
    return;
  }
  const one = /^\/sim\/clusters\/([^/]+)$/.exec(path);
  if (one && (method === 'PUT' || method === 'GET')) {
    const name = decodeURIComponent(one[1]!);
    const cluster = clusters.get(name);
    if (!cluster) throw new SimApiError(404, 'NotFound', `no simulated cluster "${name}"`);
    if (method === 'GET') {
      send(res, 200, cluster.state());
      return;
    }
    const parsed = stateInput.safeParse(await readJson(req));
    if (!parsed.success) {
      const why = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
      throw new SimApiError(400, 'BadRequest', `invalid cluster state: ${why}`);
    }
    send(res, 200, await set(name, parsed.data.state, parsed.data.latencyMs));
    return;
  }
  throw new SimApiError(404, 'NotFound', `no admin route ${method} ${path}`);
}
