/**
 * Agent-pool rollout benchmark: the real service (GraphQL, engine, SQLite, controllers, client-node over HTTP) against
 * the simulator with zero delays. One `bumpAgentImage` with maxUnavailable 100% over every pool; measured: time until
 * every agent runs the new image and is Ready (and until the rollout is SUCCEEDED), peak RSS of the service and of the
 * simulator, CPU of each per recreated agent, and Kubernetes API writes per recreated agent counted at the simulator.
 * A budgeted run uses the default API budget (50 QPS, burst 100) to compare the rollout time with requests ÷ QPS.
 *
 * The simulator runs in a child process by default, as a real API server would: rollplane's process then holds only
 * rollplane; the embedded runs (and every run with `ROLLPLANE_BENCH_SIM=inline`) put it in the service's process.
 * Both processes run with the V8 heap capped at 512 MB and 16 MB semi-spaces (`npm run bench` starts node so; the
 * child gets the same), as deploy/40-deployment.yaml runs the service: uncapped, V8 sizes the heap from the host's
 * memory and lets garbage grow to several times the live set before it collects, which says more about the host than
 * about rollplane. `BENCH_HEAP_MB=0 node dist/bench/run.js agent-rollout` (after `npx tsc -p tsconfig.bench.json`)
 * runs both uncapped.
 * Prints a table and writes bench/results/agent-rollout.json. Run: `npm run bench -- agent-rollout`. One run holds
 * direct mode, the same beside the simulated vm-dhcp-controller (coexistence, docs/adr/0017) with the ratio, the
 * budgeted run, PostgreSQL and embedded mode, each checked for correctness (bench/agentTracker.ts); `--check` compares
 * with the committed baseline, `--save-baseline` writes it (bench/agentBaseline.ts). Sizes, profiles
 * (`AGENT_BENCH_CPU_PROF=<dir>`: service and simulator) and the rest: bench/README.md, docs/adr/0047.
 *
 * Stores: the same runs on SQLite, then (where PostgreSQL's binaries are found) the 1,000-pool run again on a throwaway
 * PostgreSQL server (the tests' helper: initdb in a temporary directory, fsync off; a fresh database per run), and the
 * ratio of the two rollout times (issue 15's aim: PostgreSQL within 1.5× of SQLite). `AGENT_BENCH_PG_SIZES` (1000;
 * empty: none) picks the PostgreSQL sizes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { getHeapStatistics } from 'node:v8';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibrationMs, post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import type { AgentChecks } from './agentTracker.js';
import { checkAgainstBaseline, keyOf as caseKey, saveBaseline } from './agentBaseline.js';
import { startInlineSim, startSimChild } from './simChild.js';

const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

interface RunResult {
  store: 'sqlite' | 'postgresql';
  pools: number;
  budget: string;
  simulator: 'child process' | 'inline';
  /** `direct`: rollplane recreates the agents; `vm-dhcp`: beside the simulated vm-dhcp-controller (coexistence). */
  upstream: 'direct' | 'vm-dhcp';
  maxUnavailable: string;
  secondsToAllNewImage: number;
  secondsToSucceeded: number;
  /** Peak RSS of the service process (with an inline simulator: of both). */
  servicePeakRssMb: number;
  /** Peak RSS of the simulator child (0 inline). */
  simulatorPeakRssMb: number;
  /** Peak of service + simulator RSS, sampled together every 100 ms. */
  togetherPeakRssMb: number;
  /** CPU of the service process per recreated agent (inline: service and simulator). */
  serviceCpuMsPerAgent: number;
  simulatorCpuMsPerAgent: number;
  writes: Record<string, number>;
  writesPerAgent: number;
  requests: number;
  requestsPerAgent: number;
  /** requests ÷ QPS, for the budgeted run. */
  budgetFloorSeconds: number | null;
  /** Each agent recreated exactly once, the most pools down at once (counted at the simulator). */
  agents: AgentChecks;
  /** What broke a correctness property; empty when all hold. */
  failures: string[];
  /** The least of three calibrationMs() just before the run: how fast the machine was. */
  calibrationMs: number;
  /** The V8 heap limit of the run's process (the service's; embedded: of both). */
  heapLimitMb: number;
}

interface RunOptions {
  pools: number;
  budget?: { qps: number; burst: number };
  postgresUrl?: string;
  inline: boolean;
  upstream?: 'vm-dhcp';
  /** The rollout's maxUnavailable (a percentage). */
  maxUnavailable: string;
}

async function runOnce({ pools, budget, postgresUrl, inline, upstream, maxUnavailable }: RunOptions): Promise<RunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-agent-'));
  // The least of three: a neighbour's burst inflates one measurement, rarely all three (--check divides CPU by it).
  const calibration = Math.min(calibrationMs(), calibrationMs(), calibrationMs());
  const simOptions = {
    // upstream vm-dhcp runs the simulated vm-dhcp-controller beside it: rollplane then coexists with it
    // (holds every pool, sets the controller's --image, releases pools; upstream recreates the agents).
    fleet: `pools=${pools},nodes=${Math.max(3, Math.ceil(pools / 100))},peers=0${upstream ? `,upstream=${upstream}` : ''}`,
    kubeconfigPath: path.join(dir, 'kubeconfig'),
    heapMb: Number(process.env.BENCH_HEAP_MB ?? '512'),
  };
  const sim = inline ? await startInlineSim(simOptions) : await startSimChild(simOptions);
  const app = await startBenchApp(dir, sim.kubeconfigPath, {
    ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
    ...(postgresUrl ? { DATABASE_URL: postgresUrl } : {}),
    ...(budget ? { ROLLPLANE_KUBE_QPS: String(budget.qps), ROLLPLANE_KUBE_BURST: String(budget.burst) } : {}),
  });
  let peakRss = 0;
  let peakTogether = 0;
  const sample = () => {
    const own = process.memoryUsage.rss();
    peakRss = Math.max(peakRss, own);
    peakTogether = Math.max(peakTogether, own + sim.rss());
  };
  const sampler = setInterval(sample, 100);
  try {
    // Wait until the service lists every pool (caches synced).
    for (;;) {
      const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }', {});
      if (data.agentPools.totalCount === pools) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const profileName = `agent-rollout-${postgresUrl ? 'pg-' : ''}${pools}${budget ? '-budget' : ''}${upstream ? `-${upstream}` : ''}`;
    const profiler = windowProfiler(`${profileName}${inline ? '-inline' : '-service'}`);
    // The end of the rollout, from the service's event bus (no polling load on the process being measured).
    const ended = new Promise<string>((resolve) => {
      const unsubscribe = app.bus.subscribe((event) => {
        if (event.type === 'RolloutStateChanged' && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(String(event.payload.to))) {
          unsubscribe();
          resolve(String(event.payload.to));
        }
      });
    });
    const traceStart = { at: 0 };
    const trace = new Map<string, number[]>();
    if (process.env.AGENT_BENCH_TRACE) {
      app.bus.subscribe((event) => {
        const key = event.type === 'TargetStateChanged' ? `Target→${String(event.payload.to)}` : event.type;
        const bucket = Math.floor((Date.now() - traceStart.at) / 250);
        const counts = trace.get(key) ?? [];
        counts[bucket] = (counts[bucket] ?? 0) + 1;
        trace.set(key, counts);
      });
    }
    await sim.start(`${profileName}-sim`);
    const allNew = sim.podsOnImage(NEW, pools);
    await profiler.start();
    peakRss = 0;
    peakTogether = 0;
    sample();
    const cpu = process.cpuUsage();
    const started = Date.now();
    traceStart.at = started;
    const progress = setInterval(() => {
      const queues = app.domain
        .workQueues()
        .filter((q) => q.depth + q.inFlight.length > 0)
        .map((q) => `${q.name} ${q.depth}+${q.inFlight.length}`);
      process.stderr.write(
        `  ${pools} pools: ${Math.round((Date.now() - started) / 1000)} s; service RSS ${Math.round(process.memoryUsage().rss / 1048576)} MB; queues ${queues.join(', ') || 'empty'}\n`,
      );
    }, 5000);
    await post(app.url, 'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable } },
    });
    const state = await ended;
    const succeededAt = Date.now();
    const used = process.cpuUsage(cpu);
    clearInterval(progress);
    const profile = await profiler.stop();
    if (profile) process.stderr.write(`  CPU profile of the rollout: ${profile}\n`);
    if (state !== 'SUCCEEDED') throw new Error(`rollout ended ${state}`);
    const allNewAt = await allNew;
    for (const [key, counts] of trace) process.stderr.write(`  trace ${key}: ${Array.from(counts, (n) => n ?? 0).join(' ')}\n`);
    if (process.env.AGENT_BENCH_TRACE) {
      // How many reconciles each agent cost, by outcome: the work behind the wall time.
      const reconciles = (await app.metrics.registry.metrics()).split('\n').filter((line) => line.startsWith('controller_runtime_reconcile_total{'));
      for (const line of reconciles) process.stderr.write(`  ${line}\n`);
    }
    const simStats = await sim.stats();
    if (simStats.profile) process.stderr.write(`  CPU profile of the simulator: ${simStats.profile}\n`);
    const totalWrites = Object.values(simStats.writes).reduce((a, b) => a + b, 0);
    const perAgent = (n: number) => Math.round((n / pools) * 100) / 100;
    const failures: string[] = [];
    const agents = simStats.agents;
    if (agents.pools !== pools) failures.push(`${agents.pools} pools with an agent, expected ${pools}`);
    if (agents.createdOnce !== pools) {
      failures.push(
        `agents recreated exactly once: ${agents.createdOnce} of ${pools} (${agents.createdMoreThanOnce} more than once, ${agents.notCreated} never)`,
      );
    }
    const allowed = Math.floor((pools * Number.parseFloat(maxUnavailable)) / 100);
    if (agents.maxDown > allowed) failures.push(`${agents.maxDown} pools down at once, maxUnavailable ${maxUnavailable} allows ${allowed}`);
    const floor = budget ? Math.max(0, simStats.requests - budget.burst) / budget.qps : null;
    const seconds = (succeededAt - started) / 1000;
    // The limiter must be the bottleneck under a budget: not faster than its floor (it would be bypassed), and not
    // far slower (something else would be).
    if (floor !== null && (seconds < floor * 0.95 || seconds > floor * 1.3 + 2)) {
      failures.push(`under the budget the rollout took ${seconds.toFixed(1)} s, requests ÷ QPS is ${floor.toFixed(1)} s`);
    }
    return {
      store: postgresUrl ? 'postgresql' : 'sqlite',
      pools,
      budget: budget ? `${budget.qps} QPS, burst ${budget.burst}` : 'unthrottled',
      simulator: inline ? 'inline' : 'child process',
      upstream: upstream ?? 'direct',
      maxUnavailable,
      secondsToAllNewImage: Math.round((allNewAt - started) / 10) / 100,
      secondsToSucceeded: Math.round((succeededAt - started) / 10) / 100,
      servicePeakRssMb: Math.round(peakRss / 1048576),
      simulatorPeakRssMb: inline ? 0 : simStats.peakRssMb,
      togetherPeakRssMb: Math.round(peakTogether / 1048576),
      serviceCpuMsPerAgent: perAgent((used.user + used.system) / 1000),
      simulatorCpuMsPerAgent: inline ? 0 : perAgent(simStats.cpuMs),
      writes: simStats.writes,
      writesPerAgent: perAgent(totalWrites),
      requests: simStats.requests,
      requestsPerAgent: perAgent(simStats.requests),
      budgetFloorSeconds: floor === null ? null : Math.round(floor * 100) / 100,
      agents,
      failures,
      calibrationMs: calibration,
      heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 1048576),
    };
  } finally {
    clearInterval(sampler);
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The V8 old-space cap of a run's own process in MB (0: V8's default). */
function heapMbFor(options: RunOptions): number {
  // Embedded mode holds the service and the simulator in one heap: twice the service's cap by default.
  return options.inline ? Number(process.env.BENCH_INLINE_HEAP_MB ?? '1024') : Number(process.env.BENCH_HEAP_MB ?? '512');
}

/**
 * Runs one case in a process of its own (this module, told the case by AGENT_BENCH_CASE), with the V8 flags of
 * heapMbFor: no run inherits the garbage or the heap of the runs before it, and embedded mode gets a heap that holds
 * both halves. A case that fails (out of memory, a crash) is reported and the others go on.
 */
async function runIsolated(options: RunOptions): Promise<RunResult | undefined> {
  const out = path.join(os.tmpdir(), `rollplane-bench-case-${process.pid}-${Date.now()}.json`);
  const heapMb = heapMbFor(options);
  const heap = heapMb ? [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=16'] : [];
  const self = fileURLToPath(import.meta.url);
  const loader = path.extname(self) === '.ts' ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...heap, ...loader, self], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, AGENT_BENCH_CASE: JSON.stringify({ options, out }) },
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    if (code !== 0) throw new Error(`exited with ${code}`);
    return JSON.parse(readFileSync(out, 'utf8')) as RunResult;
  } catch (error) {
    process.stderr.write(`  ${options.pools} pools (${JSON.stringify({ ...options, postgresUrl: undefined })}) failed: ${String(error)}\n`);
    process.exitCode = 1;
    return undefined;
  } finally {
    rmSync(out, { force: true });
  }
}

function sizes(name: string, fallback: string): number[] {
  return (process.env[name] ?? fallback)
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
}

export async function run(): Promise<RunResult[]> {
  const args = process.argv.slice(2);
  const allInline = process.env.ROLLPLANE_BENCH_SIM === 'inline';
  const allUpstream = process.env.AGENT_BENCH_UPSTREAM === 'vm-dhcp';
  const direct: Omit<RunOptions, 'pools'> = { inline: allInline, maxUnavailable: '100%', ...(allUpstream ? { upstream: 'vm-dhcp' } : {}) };
  const results: (RunResult | undefined)[] = [];
  for (const pools of sizes('AGENT_BENCH_SIZES', '1000,10000')) results.push(await runIsolated({ ...direct, pools }));
  // Coexistence at scale, in the same run as direct mode (the ratio is printed below).
  if (!allUpstream) {
    for (const pools of sizes('AGENT_BENCH_UPSTREAM_SIZES', '1000,10000')) results.push(await runIsolated({ ...direct, pools, upstream: 'vm-dhcp' }));
  }
  // Under the default API budget, in waves of a quarter, so that maxUnavailable is checked too.
  for (const pools of sizes('AGENT_BENCH_BUDGET_POOLS', '200')) {
    results.push(await runIsolated({ ...direct, pools, budget: { qps: 50, burst: 100 }, maxUnavailable: '25%' }));
  }
  const pgSizes = sizes('AGENT_BENCH_PG_SIZES', '1000');
  if (pgSizes.length > 0) {
    // The tests' helper, imported only here: a SQLite-only run never loads it.
    const { findPostgresBinaries, startPostgres } = await import('../test/helpers/postgres.js');
    const binaries = findPostgresBinaries();
    if (!binaries) process.stderr.write('  no PostgreSQL binaries (initdb, pg_ctl, postgres): the PostgreSQL runs are skipped\n');
    else {
      const server = await startPostgres(binaries);
      try {
        for (const pools of pgSizes) {
          results.push(await runIsolated({ ...direct, pools, postgresUrl: await server.createDatabase(`rollplane_bench_${pools}`) }));
        }
      } finally {
        await server.stop();
      }
    }
  }
  // Embedded mode (the simulator in the service's process, as `npm start` runs it), last: it shares this process's heap.
  if (!allInline) for (const pools of sizes('AGENT_BENCH_INLINE_SIZES', '10000')) results.push(await runIsolated({ ...direct, pools, inline: true }));

  const failedCases = results.filter((r) => r === undefined).length;
  return report(
    results.filter((r): r is RunResult => r !== undefined),
    args,
    failedCases,
  );
}

function report(results: RunResult[], args: string[], failedCases: number): RunResult[] {
  const rows = results.map((r) => ({
    store: r.store,
    pools: r.pools,
    budget: r.budget === 'unthrottled' ? r.budget : `${r.budget}, maxUnavailable ${r.maxUnavailable}`,
    simulator: r.simulator === 'inline' ? 'embedded' : 'own process',
    upstream: r.upstream,
    'all new image (s)': r.secondsToAllNewImage,
    'SUCCEEDED (s)': r.secondsToSucceeded,
    'peak RSS service, sim, together (MB)': `${r.servicePeakRssMb}, ${r.simulatorPeakRssMb}, ${r.togetherPeakRssMb}`,
    'CPU ms/agent service+sim': `${r.serviceCpuMsPerAgent}+${r.simulatorCpuMsPerAgent}`,
    'writes/agent': r.writesPerAgent,
    'requests/agent': r.requestsPerAgent,
    'requests ÷ QPS (s)': r.budgetFloorSeconds ?? '',
    'recreated once / most down': `${r.agents.createdOnce}/${r.pools}, ${r.agents.maxDown}`,
    'calibration ms': r.calibrationMs,
  }));
  const heaps = [...new Set(results.map((r) => `${r.simulator === 'inline' ? 'embedded' : 'service'} ${r.heapLimitMb} MB`))].join(', ');
  console.log(
    `each run in a process of its own; V8 heap limits: ${heaps}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  if (failedCases > 0) console.log(`${failedCases} run(s) failed (see above): not in the table`);
  console.table(rows);
  for (const r of results) console.log(`${caseKey(r)} writes:`, r.writes);
  const same = (a: RunResult, b: RunResult) => a.pools === b.pools && a.budget === b.budget && a.simulator === b.simulator;
  for (const pg of results.filter((r) => r.store === 'postgresql')) {
    const sqlite = results.find((r) => r.store === 'sqlite' && r.upstream === pg.upstream && same(r, pg));
    if (sqlite) console.log(`${pg.pools} pools, PostgreSQL ÷ SQLite time to SUCCEEDED: ${(pg.secondsToSucceeded / sqlite.secondsToSucceeded).toFixed(2)}`);
  }
  for (const beside of results.filter((r) => r.upstream === 'vm-dhcp' && r.store === 'sqlite')) {
    const alone = results.find((r) => r.store === 'sqlite' && r.upstream === 'direct' && same(r, beside));
    if (alone) {
      const ratio = beside.secondsToSucceeded / alone.secondsToSucceeded;
      console.log(`${beside.pools} pools, beside vm-dhcp-controller ÷ direct time to SUCCEEDED: ${ratio.toFixed(2)} (aim ≤ 1.5)`);
    }
  }
  const failed = results.filter((r) => r.failures.length > 0);
  for (const r of failed) console.log(`CORRECTNESS ${caseKey(r)}: ${r.failures.join('; ')}`);
  if (failed.length === 0) console.log('correctness: every agent recreated exactly once, never more down than maxUnavailable, the limiter floor held');
  writeResult('agent-rollout', { name: 'agent-rollout', date: new Date().toISOString(), node: process.version, loadAverage: os.loadavg(), results });
  // Checked against the baseline as it was, then (when asked) replaced by this run.
  let regressed = false;
  if (args.includes('--check')) regressed = checkAgainstBaseline(results);
  if (args.includes('--save-baseline')) console.log(`baseline written: ${saveBaseline(results)}`);
  if (failed.length > 0 || regressed || failedCases > 0) process.exitCode = 1;
  return results;
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]);
const childCase = process.env.AGENT_BENCH_CASE;
if (isMain && childCase) {
  // One case, in its own process (runIsolated): the result goes to the file the parent reads.
  const { options, out } = JSON.parse(childCase) as { options: RunOptions; out: string };
  writeFileSync(out, JSON.stringify(await runOnce(options)));
  process.exit(0);
}
// A path, not a URL: the URL percent-encodes a space (or any other special character) in the checkout's path.
else if (isMain) await run();
