/**
 * `npm run bench -- clusters` (issue 29): what registered member clusters cost rollplane. For 0 (the baseline), 100 and
 * 1,000 clusters of 3 pools each (BENCH_CLUSTER_SIZES=0,100,1000), three processes a size:
 * - the simulated clusters (src/sim/simulatedClusters.ts, ADR 50) in a child of their own, without simulated behaviour
 *   (readiness reads /version and discovery only; the pools' agents are created Running by the fleet), plus `mgmt`, the
 *   cluster rollplane runs against (`local`);
 * - rollplane in another child (startBenchApp: the real service, SQLite), its members registered through the
 *   credentials file, so that its CPU and RSS are rollplane's alone and each size starts from a fresh process;
 * - this process, which runs the two and prints the table.
 * Measured: the time from the service's start until every member (and local) is READY, rollplane's RSS and CPU then,
 * and its idle CPU over BENCH_IDLE_MS (default 60 s) with nothing happening but the members' probes (every 30 s,
 * ROLLPLANE_MEMBER_CLUSTER_PROBE_MS). Per cluster = (size's figure − the 0-cluster baseline's) / size.
 *
 * Then, for each of BENCH_CLUSTER_ROLLOUT_SIZES (default the same sizes but 0; empty: none), the rollout part
 * (bench/clusterRollout.ts), in two fresh processes of its own: one rollout over N clusters' 3×N pools against 3×N
 * pools in one cluster, and the same with every tenth cluster black-holed mid-rollout.
 *
 * Writes bench/results/clusters.json.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { blackholedOf, labelsOf, type RolloutFigures, runRolloutApp, simProcessesFor, startRolloutClusters } from './clusterRollout.js';
import { writeResult } from './results.js';

const HERE = fileURLToPath(import.meta.url);
const EXT = path.extname(HERE);
const POOLS_FLEET = 'pools=3,nodes=1,peers=0';

type Message = Record<string, unknown>;

interface SimReady {
  local: string | undefined;
  members: { name: string; kubeconfig: string }[];
  startMs: number;
  rssMb: number;
}

interface AppFigures {
  clusters: number;
  readyMs: number;
  /** CPU from the service's start until every cluster was READY. */
  startCpuMs: number;
  rssReadyMb: number;
  rssIdleMb: number;
  heapIdleMb: number;
  idleCpuMsPerMinute: number;
}

/** Spawns this file as a child in `role`, with `options`; resolves with its first message and the child. */
type Role = 'sim' | 'app' | 'rollout-sim' | 'rollout-app';

function child(role: Role, options: unknown): Promise<{ first: Message; child: ReturnType<typeof spawn>; next: (key: string) => Promise<unknown> }> {
  const loader = EXT === '.ts' ? ['--import', 'tsx'] : [];
  const proc = spawn(process.execPath, [...loader, HERE], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ROLLPLANE_BENCH_CLUSTERS_ROLE: role, ROLLPLANE_BENCH_CLUSTERS_OPTIONS: JSON.stringify(options) },
  });
  const next = (key: string) =>
    new Promise<unknown>((resolve, reject) => {
      const onMessage = (m: Message) => {
        if (!(key in m)) return;
        proc.off('message', onMessage);
        proc.off('exit', onExit);
        resolve(m[key]);
      };
      const onExit = (code: number | null) => reject(new Error(`the ${role} child exited with ${code} before "${key}"`));
      proc.on('message', onMessage);
      proc.once('exit', onExit);
    });
  return next('ready').then((first) => ({ first: first as Message, child: proc, next }));
}

function stopChild(proc: ReturnType<typeof spawn>): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    // A child whose service does not stop (a hung rollout holds it) is killed after a while: the run goes on.
    const kill = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.send({ stop: true });
  });
}

async function measure(size: number, idleMs: number): Promise<AppFigures & { simStartMs: number; simRssMb: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-clusters-'));
  const sim = await child('sim', { size, dir: path.join(dir, 'sim') });
  try {
    const ready = sim.first as unknown as SimReady;
    // The members as the embedded mode's credentials file holds them (ADR 48), private as the source demands.
    const clusters = ready.members.map(({ name, kubeconfig }) => ({ name, labels: { tier: 'edge' }, kubeconfig: readFileSync(kubeconfig, 'utf8') }));
    writeFileSync(path.join(dir, 'member-clusters.yaml'), stringify({ clusters }), { mode: 0o600 });
    const app = await child('app', { dir, local: ready.local, size, idleMs });
    await stopChild(app.child);
    return { ...(app.first as unknown as AppFigures), simStartMs: ready.startMs, simRssMb: ready.rssMb };
  } finally {
    await stopChild(sim.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The rollout part for `size` member clusters (bench/clusterRollout.ts), in a simulator and a rollplane child of its own. */
async function measureRollout(size: number, deadlineSeconds: number): Promise<RolloutFigures & { simStartMs: number; simProcesses: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-cluster-rollout-'));
  const parts = simProcessesFor(size);
  const started = Promise.allSettled(
    Array.from({ length: parts }, (_, part) => child('rollout-sim', { size, dir: path.join(dir, `sim-${part}`), part, parts })),
  );
  const sims = (await started).flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failed = (await started).find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const ready = sims.map((s) => s.first as unknown as SimReady & { adminUrl: string });
    const members = ready.flatMap((r) => r.members.map((m) => ({ ...m, adminUrl: r.adminUrl })));
    const clusters = members.map(({ name, kubeconfig }) => ({ name, labels: labelsOf(name), kubeconfig: readFileSync(kubeconfig, 'utf8') }));
    writeFileSync(path.join(dir, 'member-clusters.yaml'), stringify({ clusters }), { mode: 0o600 });
    const adminUrls = Object.fromEntries(members.map((m) => [m.name, m.adminUrl]));
    const app = await child('rollout-app', { dir, local: ready[0]!.local, size, adminUrls, deadlineSeconds });
    await stopChild(app.child);
    return { ...(app.first as unknown as RolloutFigures), simStartMs: Math.max(...ready.map((r) => r.startMs)), simProcesses: parts };
  } finally {
    await Promise.all(sims.map((s) => stopChild(s.child)));
    rmSync(dir, { recursive: true, force: true });
  }
}

function printRollouts(rollouts: RolloutFigures[]): void {
  process.stdout.write(
    `\n${'clusters'.padStart(8)} ${'run'.padStart(10)} ${'targets'.padStart(7)} ${'end s'.padStart(7)} ${'healthy s'.padStart(9)} ${'ratio'.padStart(6)} ${'succeeded'.padStart(9)} ${'failed'.padStart(6)} ${'naming cl'.padStart(9)} ${'CPU s'.padStart(6)} ${'RSS MB'.padStart(6)} ${'load 1m'.padStart(7)} state\n`,
  );
  for (const r of rollouts) {
    const [baseline, spread] = r.runs;
    for (const run of r.runs) {
      const ratio =
        run.name === 'spread'
          ? run.seconds / baseline!.seconds
          : run.name === 'blackholed' && run.state !== 'STALLED'
            ? run.healthySeconds / spread!.healthySeconds
            : undefined;
      process.stdout.write(
        `${String(r.clusters).padStart(8)} ${run.name.padStart(10)} ${String(run.targets).padStart(7)} ${run.seconds.toFixed(1).padStart(7)} ${run.healthySeconds.toFixed(1).padStart(9)} ${(ratio === undefined ? '-' : ratio.toFixed(2)).padStart(6)} ${String(run.succeeded).padStart(9)} ${String(run.failed).padStart(6)} ${String(run.failedNamingCluster).padStart(9)} ${(run.cpuMs / 1000).toFixed(1).padStart(6)} ${String(run.peakRssMb).padStart(6)} ${String(run.loadAverage[0]).padStart(7)} ${run.state}\n`,
      );
    }
  }
  process.stdout.write(
    '  ratio: spread ÷ baseline end to end (aim ≤ 1.5); black-holed: healthy clusters ÷ spread (aim ≤ 1.1). Black-holed mid-rollout (at the first admission).\n',
  );
}

export async function run(): Promise<unknown> {
  const sizes = (process.env.BENCH_CLUSTER_SIZES ?? '0,100,1000').split(',').filter(Boolean).map(Number);
  const idleMs = Number(process.env.BENCH_IDLE_MS ?? 60_000);
  const rows: Awaited<ReturnType<typeof measure>>[] = [];
  for (const size of sizes) {
    process.stdout.write(`${size} clusters …\n`);
    rows.push(await measure(size, idleMs));
  }
  const base = rows.find((r) => r.clusters === 0);
  const perCluster = (value: (r: AppFigures) => number, r: AppFigures, scale = 1) =>
    base && r.clusters > 0 ? Math.round(((value(r) - value(base)) / r.clusters) * scale) / scale : undefined;
  const table = rows.map((r) => ({
    ...r,
    rssKbPerCluster: perCluster((x) => x.rssIdleMb * 1024, r, 10),
    heapKbPerCluster: perCluster((x) => x.heapIdleMb * 1024, r, 10),
    startCpuMsPerCluster: perCluster((x) => x.startCpuMs, r, 100),
    idleCpuMsPerClusterPerMinute: perCluster((x) => x.idleCpuMsPerMinute, r, 100),
  }));
  process.stdout.write(
    `\n${'clusters'.padStart(8)} ${'ready s'.padStart(8)} ${'start CPU ms'.padStart(12)} ${'RSS MB'.padStart(7)} ${'KB/cluster'.padStart(10)} ${'heap KB/cl'.padStart(10)} ${'start CPU ms/cl'.padStart(15)} ${'idle CPU ms/min'.padStart(15)} ${'idle ms/min/cl'.padStart(14)}\n`,
  );
  for (const r of table) {
    process.stdout.write(
      `${String(r.clusters).padStart(8)} ${(r.readyMs / 1000).toFixed(1).padStart(8)} ${String(Math.round(r.startCpuMs)).padStart(12)} ${String(Math.round(r.rssIdleMb)).padStart(7)} ${String(r.rssKbPerCluster ?? '-').padStart(10)} ${String(r.heapKbPerCluster ?? '-').padStart(10)} ${String(r.startCpuMsPerCluster ?? '-').padStart(15)} ${String(Math.round(r.idleCpuMsPerMinute)).padStart(15)} ${String(r.idleCpuMsPerClusterPerMinute ?? '-').padStart(14)}\n`,
    );
  }
  const rolloutSizes = (process.env.BENCH_CLUSTER_ROLLOUT_SIZES ?? sizes.join(','))
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const deadlineSeconds = Number(process.env.BENCH_CLUSTER_DEADLINE_S ?? 15);
  const rollouts: RolloutFigures[] = [];
  for (const size of rolloutSizes) {
    process.stdout.write(
      `rollout over ${size} clusters (${blackholedOf(size).length} black-holed in the third run; simulators in ${simProcessesFor(size)} process(es)) …\n`,
    );
    rollouts.push(await measureRollout(size, deadlineSeconds));
  }
  if (rollouts.length > 0) printRollouts(rollouts);
  const file = writeResult('clusters', { fleetPerCluster: POOLS_FLEET, idleMs, loadAverage: os.loadavg(), rows: table, rollouts });
  process.stdout.write(`\nwrote ${file}\n`);
  return table;
}

// --- the children ---------------------------------------------------------------------------------------------------

async function runSim({ size, dir }: { size: number; dir: string }): Promise<void> {
  const { startSimulatedClusters } = await import('../src/sim/simulatedClusters.js');
  const started = performance.now();
  const sims = await startSimulatedClusters({
    dir,
    concurrency: 64,
    clusters: [
      { name: 'mgmt', behaviour: false },
      ...Array.from({ length: size }, (_, i) => ({ name: `edge-${i + 1}`, fleet: POOLS_FLEET, behaviour: false })),
    ],
  });
  serveSims(sims, started);
}

/** A simulator child's life: tells the parent its clusters (and admin endpoint), stops on the parent's word or loss. */
function serveSims(sims: Awaited<ReturnType<typeof startRolloutClusters>>, started: number): void {
  process.on('message', (m: Message) => {
    if (m.stop) void sims.stop().then(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({
    ready: {
      local: sims.clusters.get('mgmt')?.kubeconfigPath,
      members: [...sims.clusters.values()].filter((c) => c.name !== 'mgmt').map((c) => ({ name: c.name, kubeconfig: c.kubeconfigPath })),
      adminUrl: sims.adminUrl,
      startMs: Math.round(performance.now() - started),
      rssMb: Math.round(process.memoryUsage().rss / 1048576),
    },
  });
}

async function runApp({ dir, local, size, idleMs }: { dir: string; local: string; size: number; idleMs: number }): Promise<void> {
  const { startBenchApp } = await import('./benchApp.js');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const app = await startBenchApp(dir, local, { ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '30000' });
  const allReady = () => {
    const snapshots = app.memberClusters.connections.snapshots();
    return snapshots.length === size + 1 && snapshots.every((s) => s.health.state === 'READY');
  };
  while (!allReady()) await new Promise((resolve) => setTimeout(resolve, 100));
  const readyMs = performance.now() - t0;
  const started = process.cpuUsage(cpu0);
  const rssReadyMb = process.memoryUsage().rss / 1048576;
  // Let the start's garbage go, then count the CPU of nothing happening.
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const idle0 = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  const idle = process.cpuUsage(idle0);
  globalThis.gc?.();
  const memory = process.memoryUsage();
  const figures: AppFigures = {
    clusters: size,
    readyMs: Math.round(readyMs),
    startCpuMs: (started.user + started.system) / 1000,
    rssReadyMb: Math.round(rssReadyMb * 10) / 10,
    rssIdleMb: Math.round((memory.rss / 1048576) * 10) / 10,
    heapIdleMb: Math.round((memory.heapUsed / 1048576) * 10) / 10,
    idleCpuMsPerMinute: Math.round(((idle.user + idle.system) / 1000) * (60_000 / idleMs)),
  };
  process.on('message', (m: Message) => {
    if (m.stop) void app.stop().then(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: figures });
}

/** The rollout part's simulator child: its clusters (bench/clusterRollout.ts) and the admin endpoint's URL. */
async function runRolloutSim({ size, dir, part, parts }: { size: number; dir: string; part: number; parts: number }): Promise<void> {
  const started = performance.now();
  const sims = await startRolloutClusters(size, dir, part, parts);
  serveSims(sims, started);
}

async function runRolloutAppChild(options: Parameters<typeof runRolloutApp>[0]): Promise<void> {
  // The parent gone (killed, or a run abandoned) ends this child at once, rollouts or not.
  process.on('disconnect', () => process.exit(0));
  const { app, figures } = await runRolloutApp(options);
  process.on('message', (m: Message) => {
    if (m.stop) void app.stop().then(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: figures });
}

const role = process.env.ROLLPLANE_BENCH_CLUSTERS_ROLE as Role | undefined;
if (role && process.send) {
  const options = JSON.parse(process.env.ROLLPLANE_BENCH_CLUSTERS_OPTIONS ?? '{}');
  if (role === 'sim') await runSim(options);
  else if (role === 'app') await runApp(options);
  else if (role === 'rollout-sim') await runRolloutSim(options);
  else await runRolloutAppChild(options);
}
