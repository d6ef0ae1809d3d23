/**
 * `npm run bench -- waves` (issue 30, ADR 0069): KubeFleet's published staged-update case on rollplane's engine.
 *
 * The engine runs as the service runs it — RolloutEngine on the controller runtime's Controller and work queue (4
 * workers, ROLLPLANE_ROLLOUT_WORKERS' default), the store on a SQLite file, the event log and bus, the launcher that
 * freezes the wave plan, the engine's event reactions — with FAKE member clusters in memory: a target's change is
 * "written" at admission and converges `BENCH_WAVES_UPGRADE_MS` later (default 0), announced to the engine as a
 * member's informer would (targetChanged). No Kubernetes API, no HTTP: the figures are the engine's own cost of waves,
 * not a member's. One pool per cluster (a cluster upgrade is one target).
 *
 * In one run, on fresh databases, each case timed from the launch to the run's SUCCEEDED event:
 * - `unstaged`: a rollout of the N clusters without waves (the baseline; maxUnavailable 100%);
 * - `staged`: the same clusters in 3 waves by a label, each at maxConcurrency 50%, no gates (KubeFleet: 1,000
 *   clusters, 3 stages at 50%, ungated, < 2 min on an 8–12-core hub); ratio = staged ÷ unstaged;
 * - `staged + gates`: the same stages, each with a 0-second soak (TIMED_WAIT of 0 s) before it and an EXTERNAL_CHECK
 *   after it that a loopback HTTP server answers 200 at once (signed, SSRF-guarded, kept in SQL as the service does);
 *   ratio = gated ÷ staged: the cost of the gates themselves (issue 30);
 * - `concurrent`: R staged runs at once (KubeFleet: 100 runs < 4 min), each over its own pool in each of M clusters.
 * CPU is this process's (user + system) over the case, per cluster upgrade (target). Prints a table and the machine's
 * load; writes bench/results/waves.json.
 *
 * | env | default | what |
 * |---|---|---|
 * | BENCH_WAVES_CLUSTERS | 1000 | clusters of the unstaged and staged cases |
 * | BENCH_WAVES_RUNS | 100 | staged runs at once in the concurrent case (0 skips it) |
 * | BENCH_WAVES_RUN_CLUSTERS | 1000 | clusters each concurrent run covers |
 * | BENCH_WAVES_UPGRADE_MS | 0 | how long a fake cluster takes to converge after its change is written |
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { Controller } from '../src/controller/Controller.js';
import { reactToRolloutEvents } from '../src/domain/engineReactions.js';
import { InProcessEventBus } from '../src/domain/EventBus.js';
import { EventLog } from '../src/domain/EventLog.js';
import { EventType } from '../src/domain/events.js';
import { GATE_TYPES, type GateTypes } from '../src/domain/gates/registry.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../src/domain/ports.js';
import { RolloutEngine } from '../src/domain/RolloutEngine.js';
import { RolloutLauncher, type RolloutPlan } from '../src/domain/RolloutLauncher.js';
import { RolloutService } from '../src/domain/RolloutService.js';
import { waveStrategyInput } from '../src/domain/waves/strategy.js';
import { KIND_CONTRACTS } from '../src/kinds/index.js';
import { externalCheckGateType } from '../src/notify/externalCheckGate.js';
import { gateLooksOn } from '../src/start/gateTypes.js';
import { TargetGuard } from '../src/notify/targetGuard.js';
import { type Database, openDatabase } from '../src/store/db.js';
import { calibrationMs } from './benchApp.js';
import { writeResult } from './results.js';

const CLUSTERS = Number(process.env.BENCH_WAVES_CLUSTERS ?? 1000);
const RUNS = Number(process.env.BENCH_WAVES_RUNS ?? 100);
const RUN_CLUSTERS = Number(process.env.BENCH_WAVES_RUN_CLUSTERS ?? 1000);
const UPGRADE_MS = Number(process.env.BENCH_WAVES_UPGRADE_MS ?? 0);
/** The service's default (ROLLPLANE_ROLLOUT_WORKERS). */
const WORKERS = 4;
const FROM = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const TO = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

/** Member clusters in memory: a change converges UPGRADE_MS after it is written, and says so as an informer would. */
class FakeMembers implements RolloutDriver {
  readonly kind = 'AGENT_POOL' as const;
  private readonly converged = new Set<string>();
  admissions = 0;
  engine: RolloutEngine | undefined;

  async admit(target: AdmittedTarget): Promise<void> {
    this.admissions++;
    const key = `${target.cluster}/${target.namespace}/${target.name}`;
    const done = () => {
      this.converged.add(key);
      this.engine?.targetChanged('AGENT_POOL', target.namespace, target.name, target.cluster);
    };
    if (UPGRADE_MS > 0) setTimeout(done, UPGRADE_MS).unref();
    else setImmediate(done);
  }

  async observe(target: AdmittedTarget): Promise<TargetObservation> {
    return this.converged.has(`${target.cluster}/${target.namespace}/${target.name}`) ? { phase: 'succeeded' } : { phase: 'progressing' };
  }
}

interface Service {
  db: Database;
  dir: string;
  bus: InProcessEventBus;
  launcher: RolloutLauncher;
  members: FakeMembers;
  stop(): Promise<void>;
}

/** The signing secret's name the gated case's external checks use (the operator's file, in the service). */
const CHECK_SECRET = 'bench';

/**
 * The gate types as src/start/gateTypes.ts composes them, without Prometheus: the built-ins and EXTERNAL_CHECK, whose
 * attempts are POSTed over HTTP (loopback allowed, as ROLLPLANE_NOTIFY_ALLOW_NETWORKS would) and kept in SQL.
 */
function benchGateTypes(db: Database, wake: (rolloutId: string) => void): GateTypes {
  const looks = gateLooksOn(db, wake, pino({ level: 'silent' }));
  return {
    ...GATE_TYPES,
    EXTERNAL_CHECK: externalCheckGateType({
      looks,
      guard: new TargetGuard(['127.0.0.0/8']),
      secrets: new Map([[CHECK_SECRET, 'bench-signing-secret']]),
      timeoutMs: 5000,
      userAgent: 'rollplane-bench',
    }),
  };
}

/** An external check that proceeds at once (2xx), counting what it was asked. */
async function startCheck(): Promise<{ url: string; asked: () => number; close(): Promise<void> }> {
  let asked = 0;
  const server: Server = createServer((request, response) => {
    asked++;
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/check`,
    asked: () => asked,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The engine as the service composes it (start/controllers.ts, engineController.ts), over fake members. */
async function startService(): Promise<Service> {
  const dir = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'rollplane-bench-waves-'));
  const db = await openDatabase(`file:${path.join(dir, 'waves.db')}`);
  const bus = new InProcessEventBus();
  // A gate that got an answer wakes its rollout (the engine's enqueue, once the controller exists).
  let wake: (rolloutId: string) => void = () => {};
  const rollouts = new RolloutService(
    db.store,
    new EventLog(db.store, bus),
    KIND_CONTRACTS,
    benchGateTypes(db, (id) => wake(id)),
  );
  const logger = { info: () => {}, warn: () => {} };
  const engine = new RolloutEngine(rollouts, logger, { clusterLabels: async () => new Map(), clusterHealth: async () => new Map() });
  const launcher = new RolloutLauncher(rollouts);
  const members = new FakeMembers();
  members.engine = engine;
  engine.registerDriver(members);
  const controller = new Controller({
    name: 'rollouts',
    workers: WORKERS,
    reconciler: { reconcile: (request, signal) => engine.reconcile(request.name, signal) },
  });
  engine.connect((id, afterMs) => (afterMs ? controller.enqueueAfter(id, afterMs) : controller.enqueue(id)), launcher);
  wake = (id) => engine.enqueue(id);
  const unreact = reactToRolloutEvents(bus, engine);
  controller.start();
  return {
    db,
    dir,
    bus,
    launcher,
    members,
    async stop() {
      unreact();
      await controller.stop();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const clusterName = (i: number) => `edge-${String(i).padStart(4, '0')}`;

function planOf(clusters: number, pool: string): RolloutPlan {
  return {
    kind: 'AGENT_POOL',
    fromVersion: FROM,
    toVersion: TO,
    selector: {},
    strategy: { kind: 'AGENT_POOL', maxUnavailable: '100%', progressDeadlineSeconds: 600, failureThreshold: clusters + 1, autoRollback: false },
    targets: Array.from({ length: clusters }, (_, i) => ({ cluster: clusterName(i), namespace: 'default', name: pool, fromVersion: FROM, toVersion: TO })),
  };
}

/** KubeFleet's stages: three by a label, each at 50% concurrency, no gates. */
const STAGED = waveStrategyInput.parse({
  waves: ['0', '1', '2'].map((ring) => ({ name: `stage-${ring}`, clusters: { labelSelector: `ring=${ring}` }, maxConcurrency: '50%' })),
  remainder: 'EXCLUDED',
})!;
/**
 * The same stages with the gates whose cost the issue asks for: a 0-second soak (a TIMED_WAIT of 0 s) before each
 * stage and an external check after it that proceeds at once.
 */
function gatedStrategy(checkUrl: string) {
  return waveStrategyInput.parse({
    waves: ['0', '1', '2'].map((ring) => ({
      name: `stage-${ring}`,
      clusters: { labelSelector: `ring=${ring}` },
      maxConcurrency: '50%',
      before: { type: 'TIMED_WAIT', config: { seconds: 0 } },
      after: { type: 'EXTERNAL_CHECK', config: { url: checkUrl, secret: CHECK_SECRET } },
    })),
    remainder: 'EXCLUDED',
  })!;
}
const registered = (clusters: number) => Array.from({ length: clusters }, (_, i) => ({ name: clusterName(i), labels: { ring: String(i % 3) } }));

interface Row {
  case: string;
  runs: number;
  clustersPerRun: number;
  upgrades: number;
  seconds: number;
  cpuMs: number;
  cpuMsPerUpgrade: number;
  ratio: number | null;
}

/** Launches `runs` rollouts at once and waits for every one's SUCCEEDED; wall and CPU from the first launch. */
async function timeRuns(name: string, runs: number, clusters: number, strategy: typeof STAGED | undefined): Promise<Omit<Row, 'ratio'>> {
  const service = await startService();
  try {
    // Counted by the bus (the service's own event stream): a run may end before its launch call returns.
    const ended = new Set<string>();
    const failed: string[] = [];
    let allDone!: () => void;
    const done = new Promise<void>((resolve) => (allDone = resolve));
    service.bus.subscribe((event) => {
      if (event.type !== EventType.RolloutStateChanged || !event.rolloutId) return;
      const to = String(event.payload.to);
      if (!['SUCCEEDED', 'FAILED', 'PAUSED', 'ABORTED'].includes(to)) return;
      if (to !== 'SUCCEEDED') failed.push(`${event.rolloutId}: ${to} ${String(event.payload.message ?? '')}`);
      ended.add(event.rolloutId);
      if (ended.size === runs) allDone();
    });
    const cpu = process.cpuUsage();
    const start = performance.now();
    await Promise.all(
      Array.from({ length: runs }, async (_, r) =>
        service.launcher.launch({
          plan: planOf(clusters, `pool-${r}`),
          cause: { actor: 'bench' },
          request: { bench: name, run: r },
          ...(strategy ? { staged: { strategy, registered: registered(clusters), startedBy: 'bench' } } : {}),
        }),
      ),
    );
    await done;
    const seconds = (performance.now() - start) / 1000;
    const used = process.cpuUsage(cpu);
    if (failed.length > 0) throw new Error(`${name}: ${failed.length} run(s) did not succeed: ${failed.slice(0, 3).join('; ')}`);
    if (service.members.admissions !== runs * clusters) throw new Error(`${name}: ${service.members.admissions} admissions, expected ${runs * clusters}`);
    const cpuMs = (used.user + used.system) / 1000;
    return { case: name, runs, clustersPerRun: clusters, upgrades: runs * clusters, seconds, cpuMs, cpuMsPerUpgrade: cpuMs / (runs * clusters) };
  } finally {
    await service.stop();
  }
}

export async function run(): Promise<void> {
  const calibration = calibrationMs();
  const loadBefore = loadavg();
  const rows: Row[] = [];
  const unstaged = await timeRuns('unstaged', 1, CLUSTERS, undefined);
  rows.push({ ...unstaged, ratio: 1 });
  const staged = await timeRuns('staged (3 waves at 50%)', 1, CLUSTERS, STAGED);
  rows.push({ ...staged, ratio: staged.seconds / unstaged.seconds });
  // The cost of the gates themselves: the staged run with a 0 s soak and an external check at each stage, ÷ ungated.
  const check = await startCheck();
  try {
    const gated = await timeRuns('staged + gates (0 s soak, check)', 1, CLUSTERS, gatedStrategy(check.url));
    if (check.asked() !== 3) throw new Error(`gated: the external check was asked ${check.asked()} times, expected 3 (once per stage)`);
    rows.push({ ...gated, ratio: gated.seconds / staged.seconds });
  } finally {
    await check.close();
  }
  if (RUNS > 0) {
    const concurrent = await timeRuns(`${RUNS} staged runs at once`, RUNS, RUN_CLUSTERS, STAGED);
    rows.push({ ...concurrent, ratio: null });
  }
  const loadAfter = loadavg();
  const fmt = (n: number, digits = 2) => n.toFixed(digits);
  const table = [
    ['case', 'runs', 'clusters/run', 'upgrades', 'seconds', 'CPU ms', 'CPU ms/upgrade', 'ratio'],
    ...rows.map((r) => [
      r.case,
      String(r.runs),
      String(r.clustersPerRun),
      String(r.upgrades),
      fmt(r.seconds),
      fmt(r.cpuMs, 0),
      fmt(r.cpuMsPerUpgrade, 3),
      r.ratio === null ? '' : fmt(r.ratio),
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`);
  process.stdout.write(
    `fake members (in memory), converge ${UPGRADE_MS} ms after the write; SQLite; ${WORKERS} engine workers; ${cpus().length} cores; ` +
      `load ${loadBefore.map((l) => l.toFixed(2)).join(' ')} → ${loadAfter.map((l) => l.toFixed(2)).join(' ')}; calibration ${calibration.toFixed(1)} ms\n`,
  );
  const file = writeResult('waves', {
    members: 'fake (in memory)',
    upgradeMs: UPGRADE_MS,
    store: 'sqlite',
    workers: WORKERS,
    cores: cpus().length,
    loadBefore,
    loadAfter,
    calibrationMs: calibration,
    rows,
  });
  process.stdout.write(`wrote ${file}\n`);
}
