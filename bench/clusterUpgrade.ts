/**
 * Virtual-cluster upgrade benchmark: 100 VirtualClusters (simulator with zero delays), one `bumpClusterVersion` with
 * maxConcurrent 10 through the real service (GraphQL, engine, SQLite, controllers, client-node over HTTP, real X.509
 * PKI). Compared with the simulator's own work for the same rollouts: the apiserver then the controller-manager
 * StatefulSet of every cluster changed and rolled, 10 clusters at a time, written straight into the simulator's
 * store (no HTTP, no rollplane). rollplane's overhead per cluster = (rollplane time − simulator time) ÷ 100: what
 * rollplane adds to the rollout for each cluster; × 10 it is the extra latency of one upgrade while ten share the
 * service's event loop. Also: API requests per cluster, and CPU per cluster of the service (rollplane alone: the
 * simulator runs in a child process, see simChild.ts) and of the simulator.
 * Prints a table and writes bench/results/cluster-upgrade.json. Run: `npm run bench -- cluster-upgrade`
 * (`VC_BENCH_CLUSTERS=100`, `VC_BENCH_CONCURRENCY=10` to change the sizes; `VC_BENCH_KEYS=rsa-2048,ecdsa-p256`, the
 * default, runs the rollout once per key type and reports each one's CPU per cluster, the first in the main rows;
 * `BENCH_CPU_PROFILE=<dir>` for a CPU profile of the service during the rollout).
 */
import { post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { zeroDelays } from '../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../src/sim/index.js';
import { Resources } from '../src/sim/store/resources.js';
import { generateClusterPki, type KeyAlgorithm } from '../src/kinds/virtualCluster/controller/pki.js';
import type { KubeObject } from '../src/sim/types.js';

const CV = 'cv-sample-np';

function fleet(clusters: number): string {
  return `clusters=${clusters},nodes=${Math.max(3, Math.ceil(clusters / 20))},peers=0`;
}

function rolled(sts: KubeObject | undefined, generation: number): boolean {
  const s = sts?.status;
  const replicas = sts?.spec?.replicas ?? 1;
  return (
    !!sts &&
    (sts.metadata.generation ?? 0) >= generation &&
    (s?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0) &&
    s?.updatedReplicas === replicas &&
    s?.readyReplicas === replicas &&
    s?.currentRevision === s?.updateRevision
  );
}

/** Resolves when `check` holds, re-checked on every store event (no polling delay added to the measurement). */
function whenStore(sim: Simulator, check: () => boolean): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve) => {
    const unsubscribe = sim.store.subscribe(() => {
      if (!check()) return;
      unsubscribe();
      resolve();
    });
  });
}

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** The simulator's own work: each cluster's apiserver then controller-manager StatefulSet changed and rolled. */
async function simulatorOnly(clusters: number, concurrency: number): Promise<{ seconds: number; cpuMs: number }> {
  const sim = await startSimulator({ fleet: fleet(clusters), delays: zeroDelays });
  try {
    const vcs = sim.store.list(Resources.virtualclusters, 'default');
    const cpu = process.cpuUsage();
    const started = performance.now();
    await pool(vcs, concurrency, async (vc) => {
      const ns = vc.status.clusterNamespace as string;
      for (const name of ['apiserver', 'controller-manager']) {
        const sts = structuredClone(sim.store.get(Resources.statefulsets, ns, name)!);
        sts.spec.template.spec.containers[0].args = ['-v=7'];
        sts.spec.template.metadata.annotations = { ...sts.spec.template.metadata.annotations, 'bench/restart': String(Date.now()) };
        const generation = sim.store.update(Resources.statefulsets, sts).metadata.generation ?? 0;
        await whenStore(sim, () => rolled(sim.store.get(Resources.statefulsets, ns, name), generation));
      }
    });
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return { seconds, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    await sim.stop();
  }
}

interface RollplaneRun {
  seconds: number;
  /** CPU of the service process (rollplane alone). */
  cpuMs: number;
  /** CPU of the simulator child (API serving and simulated controllers). */
  simCpuMs: number;
  requests: number;
  writes: Record<string, number>;
  p50: number;
  p95: number;
  max: number;
  pkiSeconds: number;
  /** Share of the wall time the service's event loop was busy: near 1 with low CPU means the OS starved the process. */
  eventLoopUtilization: number;
}

async function withRollplane(clusters: number, concurrency: number, keyAlgorithm: KeyAlgorithm): Promise<RollplaneRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-vc-'));
  const sim = await startSimChild({ fleet: fleet(clusters), kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: Number(process.env.BENCH_HEAP_MB ?? '512') });
  const app = await startBenchApp(dir, sim.kubeconfigPath, { ROLLPLANE_VC_KEY_ALGORITHM: keyAlgorithm });
  try {
    for (;;) {
      const data = await post(app.url, '{ virtualClusters(first: 1) { totalCount } }');
      if (data.virtualClusters.totalCount === clusters) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await sim.start();
    const profiler = windowProfiler('cluster-upgrade');
    await profiler.start();
    // The end of the rollout, from the service's event bus (no polling load on the process being measured).
    const ended = new Promise<void>((resolve) => {
      const unsubscribe = app.bus.subscribe((event) => {
        if (event.type === 'RolloutStateChanged' && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(String(event.payload.to))) {
          unsubscribe();
          resolve();
        }
      });
    });
    const cpu = process.cpuUsage();
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const bump = await post(app.url, 'mutation B($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id } } }', {
      input: {
        clusterVersion: CV,
        apiServer: { args: ['-v=7'] },
        controllerManager: { args: ['-v=7'] },
        maxConcurrent: concurrency,
        progressDeadlineSeconds: 600,
      },
    });
    const id = bump.bumpClusterVersion.rollout.id as string;
    await ended;
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const eventLoopUtilization = performance.eventLoopUtilization(elu).utilization;
    const profile = await profiler.stop();
    if (profile) process.stderr.write(`  CPU profile of the rollout: ${profile}\n`);
    const simStats = await sim.stats();
    const final = (await post(app.url, 'query R($id: ID!) { rollout(id: $id) { state message } }', { id })).rollout;
    if (final.state !== 'SUCCEEDED') throw new Error(`rollout ended ${final.state}: ${final.message}`);
    const stats = (await post(app.url, `{ clusterUpgradeDurations(clusterVersion: "${CV}") { count p50Seconds p95Seconds maxSeconds } }`))
      .clusterUpgradeDurations[0];
    if (stats.count !== clusters) throw new Error(`expected ${clusters} observations, got ${stats.count}`);
    let pkiSeconds = 0;
    for (let after: string | null = null; ; ) {
      const page: any = (
        await post(
          app.url,
          'query E($after: String) { events(first: 100, after: $after, filter: { types: [ClusterUpgradeObserved] }) { edges { node { payload } } pageInfo { hasNextPage endCursor } } }',
          { after },
        )
      ).events;
      for (const edge of page.edges) pkiSeconds += edge.node.payload.components.find((c: { component: string }) => c.component === 'pki')?.seconds ?? 0;
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    return {
      seconds,
      cpuMs: (used.user + used.system) / 1000,
      simCpuMs: simStats.cpuMs,
      requests: simStats.requests,
      writes: simStats.writes,
      p50: stats.p50Seconds,
      p95: stats.p95Seconds,
      max: stats.maxSeconds,
      pkiSeconds,
      eventLoopUtilization,
    };
  } finally {
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU of one cluster's PKI (root CA kept, six secrets issued), measured alone. */
async function pkiCpuMs(keyAlgorithm: KeyAlgorithm): Promise<number> {
  const input = {
    clusterName: 'vc',
    clusterNamespace: 'ns',
    apiserverServiceName: 'apiserver-svc',
    apiserverPort: 6443,
    etcdServiceName: 'etcd',
    etcdStatefulSetName: 'etcd',
    etcdReplicas: 1,
  };
  const options = { keyAlgorithm };
  const root = (await generateClusterPki(input, options)).rootCa;
  for (let i = 0; i < 5; i++) await generateClusterPki({ ...input, rootCaData: root }, options); // warm-up
  const cpu = process.cpuUsage();
  const n = 20;
  for (let i = 0; i < n; i++) await generateClusterPki({ ...input, rootCaData: root }, options);
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000 / n;
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export async function run() {
  const clusters = Number(process.env.VC_BENCH_CLUSTERS ?? '100');
  const concurrency = Number(process.env.VC_BENCH_CONCURRENCY ?? '10');
  const keys = (process.env.VC_BENCH_KEYS ?? 'rsa-2048,ecdsa-p256').split(',').map((k) => k.trim()) as KeyAlgorithm[];
  for (const key of keys) if (key !== 'rsa-2048' && key !== 'ecdsa-p256') throw new Error(`VC_BENCH_KEYS: unknown key type ${key} (rsa-2048, ecdsa-p256)`);
  const loadBefore = os.loadavg()[0]!;
  const baseline = await simulatorOnly(clusters, concurrency);
  const byKey: Record<string, { run: RollplaneRun; pkiCpuMs: number }> = {};
  for (const key of keys) byKey[key] = { run: await withRollplane(clusters, concurrency, key), pkiCpuMs: await pkiCpuMs(key) };
  const rollplane = byKey[keys[0]!]!.run;
  const pki = byKey[keys[0]!]!.pkiCpuMs;
  // What rollplane adds to the rollout, per cluster: the extra wall time of the whole rollout over the simulator doing
  // the same work alone, divided by the clusters. Times `concurrency` it is the extra latency of one cluster's upgrade
  // while `concurrency` upgrades share the service's one event loop.
  const overheadMs = ((rollplane.seconds - baseline.seconds) * 1000) / clusters;
  const latencyMs = overheadMs * concurrency;
  const cpuPerCluster = rollplane.cpuMs / clusters;
  const rows = [
    {
      metric: 'simulator only: all clusters rolled',
      value: round(baseline.seconds),
      unit: 's',
      note: `${clusters} clusters, ${concurrency} at a time, 2 StatefulSets each, in-process`,
    },
    {
      metric: 'rollplane: bump → rollout SUCCEEDED',
      value: round(rollplane.seconds),
      unit: 's',
      note: 'GraphQL, engine, SQLite, controllers, PKI, client-node over HTTP to a simulator child process',
    },
    { metric: 'rollplane overhead per cluster', value: round(overheadMs, 1), unit: 'ms', note: `(rollplane − simulator) ÷ ${clusters}; aim ≤ 50 ms` },
    {
      metric: 'extra latency of one upgrade',
      value: round(latencyMs, 1),
      unit: 'ms',
      note: `the same × ${concurrency}: ${concurrency} upgrades at once share one event loop`,
    },
    {
      metric: 'service event loop utilization',
      value: round(rollplane.eventLoopUtilization),
      unit: '',
      note: `CPU ${round(rollplane.cpuMs / 1000, 1)} s over ${round(rollplane.seconds, 1)} s wall; load average ${round(loadBefore, 1)} on ${os.availableParallelism()} CPUs`,
    },
    {
      metric: 'rollplane CPU per cluster',
      value: round(cpuPerCluster, 1),
      unit: 'ms',
      note: `${keys[0]} keys; service process only (PKI worker included); of which PKI ≈ ${round(pki, 1)} ms (measured alone)`,
    },
    ...keys.slice(1).map((key) => ({
      metric: `rollplane CPU per cluster, ${key}`,
      value: round(byKey[key]!.run.cpuMs / clusters, 1),
      unit: 'ms',
      note: `same rollout with ${key} keys; of which PKI ≈ ${round(byKey[key]!.pkiCpuMs, 1)} ms (measured alone); ${round(byKey[key]!.run.seconds, 2)} s wall`,
    })),
    {
      metric: 'rollplane CPU per cluster without PKI',
      value: round(cpuPerCluster - pki, 1),
      unit: 'ms',
      note: 'engine, SQLite history, GraphQL, client-node, reconcile',
    },
    {
      metric: 'simulator CPU per cluster (child)',
      value: round(rollplane.simCpuMs / clusters, 1),
      unit: 'ms',
      note: `API serving + simulated controllers; simulator-only run: ${round(baseline.cpuMs / clusters, 1)} ms`,
    },
    {
      metric: 'clusters_upgrade_seconds p50',
      value: round(rollplane.p50, 3),
      unit: 's',
      note: `p95 ${round(rollplane.p95, 3)} s, max ${round(rollplane.max, 3)} s; pki step mean ${round(rollplane.pkiSeconds / clusters, 3)} s`,
    },
    {
      metric: 'Kubernetes API requests per cluster',
      value: round(rollplane.requests / clusters, 1),
      unit: 'req',
      note: Object.entries(rollplane.writes)
        .map(([k, v]) => `${k} ${round(v / clusters, 1)}`)
        .join(', '),
    },
  ];
  console.table(rows);
  const result = {
    name: 'cluster-upgrade',
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.availableParallelism(),
    /** 1-minute load average: wall-clock figures taken on a busy machine read high; CPU figures do not. */
    loadAverage: { before: loadBefore, after: os.loadavg()[0] },
    clusters,
    concurrency,
    baseline,
    keyAlgorithm: keys[0],
    rollplane,
    pkiCpuMsPerCluster: round(pki, 1),
    byKey: Object.fromEntries(
      keys.map((key) => [
        key,
        { cpuMsPerCluster: round(byKey[key]!.run.cpuMs / clusters, 1), pkiCpuMsPerCluster: round(byKey[key]!.pkiCpuMs, 1), seconds: byKey[key]!.run.seconds },
      ]),
    ),
    overheadMsPerCluster: round(overheadMs, 1),
    extraLatencyMsPerUpgrade: round(latencyMs, 1),
    aimMet: overheadMs <= 50,
    rows,
  };
  writeResult('cluster-upgrade', result);
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  await run();
}
