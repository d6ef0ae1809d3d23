/**
 * API read-path benchmark (issue 17; execution paths side by side since issue 28): the real server (compiled) with a
 * simulated fleet of pools and a history of rollouts and events, driven over loopback by autocannon in a separate
 * process (apiLoad.ts), one request kind at a time. The same-run baseline is `{ __typename }` (the framework's floor);
 * every other request is reported as req/s, p50, p99 and its ratio to that baseline. The requests are the ones the UI
 * (src/ui/client/queries.graphql and the kinds' src/kinds/<kind>/ui/queries.graphql), the CLI and CI (src/cli/operations.graphql; `rollplane bump --wait` polls
 * `Rollout`) send, plus a refused mix to show refusals stay cheap.
 *
 * Execution paths (EXECUTION_PATHS; `API_BENCH_PATHS` picks some): one server per path over the same seeded store, in
 * this process beside one another, each configured so that only that path answers — `interpreted` (graphql-js, the
 * response cache off) and `cached` (the defaults: answers kept by write generation, ADR 0026). Each request kind is
 * loaded on every path in turn, so that its figures on each path are taken within a minute of one another, and every
 * figure is also taken relative to its own path's `{ __typename }`; "what each path buys" divides those relative
 * figures (ADR 0039 keeps a path only where it buys ≥ 1.5× on such a request). With the cache on, a quiet history
 * makes every repeated query a hit, which is the case between rollouts but not during one:
 * `API_BENCH_WRITES_PER_SECOND` (0) appends that many events per second to the history while the load runs (each a
 * commit, so each ends every kept answer), and the "cached" column shows the share of requests the cache answered.
 *
 * Run: `npm run bench -- api`. Sizes: `API_BENCH_ROLLOUTS` (1000), `API_BENCH_EVENTS` (100000; 10000 and 1000000 to
 * check that history queries do not slow down with history), `API_BENCH_POOLS` (200), `API_BENCH_SECONDS` (8),
 * `API_BENCH_CONNECTIONS` (20).
 *
 * Stores (issue 15, issue 17: the read path measured on both with the same benchmark): SQLite, then the same seed and
 * the same requests on a throwaway PostgreSQL server (the tests' helper: initdb in a temporary directory, fsync off),
 * each with its own seed, servers and simulator and its own same-run baselines. Where PostgreSQL's binaries are
 * missing, a line says so and only SQLite is measured. `API_BENCH_STORES` (sqlite,postgresql) picks the stores (a
 * store named there alone must run: missing binaries are then an error). Writes
 * bench/results/api[-sqlite|-pg][-10k-events|-1m-events].json (no store suffix with both).
 *
 * Besides req/s (which on a shared machine measures the machine as much as the server), each request kind reports
 * requests per CPU-second of this process (the servers; only the loaded one is busy), and its ratio to the baseline's.
 * `BENCH_CPU_PROFILE=<dir>` writes one V8 CPU profile per request kind and path (the load window only). Then
 * `API_BENCH_INTERLEAVED_ROUNDS` (300) rounds of every kind on every path in turn, one connection per server, give each
 * kind's median latency beside the baseline's under the same machine load (0 skips them).
 */
import { KIND_CONTRACTS } from '../src/kinds/index.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventType } from '../src/domain/events.js';
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { AGENT_POOLS } from '../src/kinds/agentPool/ui/queries.js';
import { DRIFT, EVENTS, ROLLOUT_DETAIL, ROLLOUT_TARGETS, ROLLOUTS } from '../src/ui/client/queries.js';
import { fleetQuery } from '../src/cli/fleet.js';
import { HISTORY_QUERY, ROLLOUT_QUERY } from '../src/cli/operations.js';
import { KIND_FLEET_PARTS } from '../src/kinds/cli.js';
import type { InterleavedResult, LoadJob, LoadRequest, LoadResult } from './apiLoad.js';
import type { App } from '../src/app.js';
import { calibrationMs, post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';
import { type BenchStore, forEachStore, ratioOf, STORE_LABEL } from './stores.js';
import { defaultStrategy } from '../src/domain/kinds/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const numberFrom = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/**
 * The execution paths measured side by side in one run (issue 28): each is a fresh server over the same seeded store,
 * configured so that only that path answers. `API_BENCH_PATHS` picks some of them (comma-separated, in this order).
 */
const EXECUTION_PATHS = {
  /** graphql-js for every request (the response cache off). */
  interpreted: { ROLLPLANE_RESPONSE_CACHE_MB: '0' },
  /** Answers kept by write generation (ADR 0026), graphql-js for the rest: the defaults. */
  cached: {},
  // compiled (graphql-jit, ADR 0025) was measured here too until ADR 0039 deleted it (under 1.5× of interpreted).
} as const satisfies Record<string, Record<string, string>>;
type ExecutionPath = keyof typeof EXECUTION_PATHS;

function pathsFrom(raw: string | undefined): ExecutionPath[] {
  const known = Object.keys(EXECUTION_PATHS) as ExecutionPath[];
  if (!raw?.trim()) return known;
  const paths = raw.split(',').map((p) => p.trim());
  for (const p of paths) if (!known.includes(p as ExecutionPath)) throw new Error(`API_BENCH_PATHS: unknown path "${p}" (known: ${known.join(', ')})`);
  return paths as ExecutionPath[];
}

/** A typed document (the UI's and the CLI's generated ones) with its variables, or a hand-built query string. */
function request<TVariables>(
  name: string,
  query: string | DocumentTypeDecoration<unknown, TVariables>,
  variables: TVariables | Record<string, unknown> = {},
  status = 200,
): LoadRequest {
  return { name, body: JSON.stringify({ query: String(query), variables }), status };
}

function runLoad(job: LoadJob & { interleavedRounds: number }): Promise<InterleavedResult[]>;
function runLoad(job: LoadJob): Promise<LoadResult[]>;
function runLoad(job: LoadJob): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const script = path.join(HERE, `apiLoad${path.extname(fileURLToPath(import.meta.url))}`);
    const child = spawn(process.execPath, [...process.execArgv, script, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) =>
      code === 0
        ? resolve(
            out
              .trim()
              .split('\n')
              .map((l) => JSON.parse(l) as unknown),
          )
        : reject(new Error(`load generator exited ${code}`)),
    );
  });
}

type Row = LoadResult & {
  requestsPerCpuSecond: number;
  ratioToBaseline: number;
  cpuRatioToBaseline: number;
  cachedShare: number;
  executors: Record<string, number>;
};

/** One execution path's measurements on one store: its own server over the store's seed, its own same-run baseline. */
interface PathRun {
  path: ExecutionPath;
  results: Row[];
  interleaved: InterleavedResult[];
}

/** One store's measurements: one seed, then one server per execution path over it, loaded side by side. */
interface StoreRun {
  store: BenchStore;
  seedSeconds: number;
  calibrationMs: number;
  /** os.loadavg()[0] at the start and the end of the load: these machines are shared. */
  loadAverage: [number, number];
  /** CPU of this process (the servers) over the whole load. */
  serverCpuSeconds: number;
  writesPerSecond: number;
  /** The events API_BENCH_WRITES_PER_SECOND's writer appended while the load ran. */
  historyWrites: number;
  paths: PathRun[];
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const EXECUTORS = ['interpreted', 'cached'];

/** The server's `rollplane_graphql_executions_total` by executor. */
async function executions(graphqlUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(new URL('/metrics', graphqlUrl))).text();
  const out: Record<string, number> = {};
  for (const match of text.matchAll(/^rollplane_graphql_executions_total\{executor="(\w+)"\} (\S+)$/gm)) out[match[1]!] = Number(match[2]);
  return out;
}

/** Appends `perSecond` events a second to the history (one commit each) until stopped; resolves to how many. */
function historyWriter(app: App, rolloutId: string, perSecond: number): { stop(): Promise<number> } {
  let written = 0;
  let pending = Promise.resolve();
  const timer = setInterval(() => {
    pending = pending.then(async () => {
      await app.domain.events.append({
        type: EventType.AgentRecreated,
        rolloutId,
        kind: 'AGENT_POOL',
        namespace: 'default',
        name: `pool-${written % 200}`,
        payload: { pool: `default/pool-${written % 200}`, oldImage: 'agent:v1', newImage: 'agent:v2', seconds: 3.2 },
      });
      written += 1;
    });
  }, 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      return written;
    },
  };
}

/** Seeds `app`'s store with `rollouts` rollouts of 10 targets and `events` events; resolves to the last rollout's id. */
async function seed(app: App, sizes: { rollouts: number; events: number }): Promise<string> {
  let lastRollout = '';
  for (let i = 0; i < sizes.rollouts; i++) {
    const targets = Array.from({ length: 10 }, (_, t) => ({
      namespace: 'default',
      name: `pool-${t}`,
      fromVersion: 'agent:v1',
      toVersion: `agent:v${i + 2}`,
    }));
    const { rollout } = await app.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion: `agent:v${i + 2}`,
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: `ci-${i % 7}`, commit: `c${i}`, message: `release ${i}` },
      targets,
    });
    lastRollout = rollout.id;
  }
  const already = await app.domain.events.lastEventId();
  for (let written = already; written < sizes.events; written += 1000) {
    const batch = Array.from({ length: Math.min(1000, sizes.events - written) }, (_, i) => ({
      type: EventType.AgentRecreated,
      rolloutId: lastRollout,
      kind: 'AGENT_POOL' as const,
      namespace: 'default',
      name: `pool-${(written + i) % 200}`,
      payload: { pool: `default/pool-${(written + i) % 200}`, oldImage: 'agent:v1', newImage: 'agent:v2', seconds: 3.2 },
    }));
    await app.domain.events.append(...batch);
  }
  return lastRollout;
}

/**
 * The requests: the baseline, then what the UI (src/ui/client/queries.graphql and the kinds' src/kinds/<kind>/ui/queries.graphql), the CLI and CI (src/cli/operations.graphql:
 * `rollplane bump --wait` polls `Rollout`; `history` and `fleet` are the CLI's other reads) send, then a refused mix.
 */
function requestsFor(lastRollout: string): LoadRequest[] {
  return [
    request('{ __typename } (baseline)', '{ __typename }'),
    request('UI: rollouts list (first 20)', ROLLOUTS, { first: 20 }),
    request('UI: rollout detail', ROLLOUT_DETAIL, { id: lastRollout }),
    request('UI: rollout targets (first 50)', ROLLOUT_TARGETS, { id: lastRollout, first: 50 }),
    request('UI: events page (first 50)', EVENTS, { first: 50 }),
    request('UI: events of one pool (first 50)', EVENTS, { first: 50, filter: { namespace: 'default', name: 'pool-7' } }),
    request('UI: agentPools page (first 100)', AGENT_POOLS, { first: 100 }),
    request('UI: drift (first 50)', DRIFT, { first: 50 }),
    request('CLI/CI --wait: rollout(id)', ROLLOUT_QUERY, { id: lastRollout }),
    request('CLI: history (first 20)', HISTORY_QUERY, { first: 20 }),
    request('CLI: fleet', fleetQuery(KIND_FLEET_PARTS), {}),
    request(
      'refused: over the cost limit',
      `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: rollouts(first: 100) { edges { node { id state kind toVersion fromVersion progress { total succeeded } } } }`).join(' ')} }`,
      {},
      400,
    ),
    request('refused: unknown field', '{ nope }', {}, 400),
  ];
}

/** One request kind's load on one server: req/s, latency, CPU of this process (the servers), executors that answered. */
async function loadOne(app: App, profileName: string, one: LoadRequest): Promise<Omit<Row, 'ratioToBaseline' | 'cpuRatioToBaseline'>> {
  const profiler = windowProfiler(profileName);
  await profiler.start();
  const cpuOfOne = process.cpuUsage();
  const executionsBefore = await executions(app.url);
  const [result] = await runLoad({
    url: app.url,
    connections: numberFrom('API_BENCH_CONNECTIONS', 20),
    seconds: numberFrom('API_BENCH_SECONDS', 8),
    requests: [one],
  });
  const { user, system } = process.cpuUsage(cpuOfOne);
  const executionsAfter = await executions(app.url);
  await profiler.stop();
  const executors = Object.fromEntries(EXECUTORS.map((e) => [e, (executionsAfter[e] ?? 0) - (executionsBefore[e] ?? 0)]));
  const all = EXECUTORS.reduce((sum, e) => sum + executors[e]!, 0);
  // Requests per CPU-second of the server's process: steadier than req/s on a machine shared with other work.
  return { ...result!, requestsPerCpuSecond: result!.total / ((user + system) / 1e6), cachedShare: all > 0 ? executors.cached! / all : 0, executors };
}

/**
 * Loads every path's server with each request kind, the paths in turn for each kind (so that one kind's figures on
 * each path are taken minutes apart at most, on a machine whose speed changes from one minute to the next), then the
 * interleaved rounds: one request of each kind on each path in turn, on one connection per server.
 */
async function loadPaths(
  apps: { path: ExecutionPath; app: App }[],
  store: BenchStore,
  requests: LoadRequest[],
): Promise<Pick<StoreRun, 'calibrationMs' | 'loadAverage' | 'serverCpuSeconds' | 'paths'>> {
  // Warm-up, not measured: every kind on every path for API_BENCH_WARMUP_SECONDS (1) each, so that no path's first
  // window pays for V8's warm-up or for the servers started after it still filling their informers' caches (the first
  // run of this benchmark measured the same `{ __typename }` at 1,957 and 6,327 req/CPU-s on two paths).
  // One connection: a slow kind at 20 connections would leave a backlog that the next window pays for.
  for (const { app } of apps) await runLoad({ url: app.url, connections: 1, seconds: numberFrom('API_BENCH_WARMUP_SECONDS', 1), requests });
  const calibration = calibrationMs();
  const loadAtStart = os.loadavg()[0]!;
  const cpuBefore = process.cpuUsage();
  const results = new Map<ExecutionPath, Omit<Row, 'ratioToBaseline' | 'cpuRatioToBaseline'>[]>(apps.map(({ path }) => [path, []]));
  for (const [i, one] of requests.entries()) {
    for (const { path, app } of apps) {
      // BENCH_CPU_PROFILE=<dir> records one profile of the servers per request kind and path.
      const name = `api-${store}-${path}-${String(i).padStart(2, '0')}-${one.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`;
      results.get(path)!.push(await loadOne(app, name, one));
      // The window's last requests may still be running (20 connections of a 200 ms query are 4 s of CPU): wait for
      // every server to answer, so that the next window starts on idle servers.
      for (const other of apps) await post(other.app.url, '{ __typename }');
    }
  }
  const cpu = process.cpuUsage(cpuBefore);
  const rounds = numberFrom('API_BENCH_INTERLEAVED_ROUNDS', 300);
  // Kind by kind, each on every path in turn: one kind's requests on the paths are sent back to back.
  const tagged = requests.flatMap((r) => apps.map(({ path, app }) => ({ ...r, name: `${path}\u0000${r.name}`, url: app.url })));
  const interleaved = rounds > 0 ? await runLoad({ url: apps[0]!.app.url, connections: 1, seconds: 0, requests: tagged, interleavedRounds: rounds }) : [];
  const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
  const loadAverage: [number, number] = [round1(loadAtStart), round1(os.loadavg()[0]!)];
  const paths = apps.map(({ path }) => {
    const rows = results.get(path)!;
    const baseline = rows[0]!;
    return {
      path,
      results: rows.map((r) => ({
        ...r,
        requestsPerCpuSecond: Math.round(r.requestsPerCpuSecond),
        ratioToBaseline: ratio(r.requestsPerSecond, baseline.requestsPerSecond),
        cpuRatioToBaseline: ratio(r.requestsPerCpuSecond, baseline.requestsPerCpuSecond),
      })),
      interleaved: interleaved.filter((r) => r.name.startsWith(`${path}\u0000`)).map((r) => ({ ...r, name: r.name.slice(path.length + 1) })),
    };
  });
  return { calibrationMs: calibration, loadAverage, serverCpuSeconds: (cpu.user + cpu.system) / 1e6, paths };
}

/**
 * Seeds a fresh store once, then starts one server per execution path over it, each configured for that path alone
 * (in this process, beside one another, the same simulator behind them), and loads them (loadPaths).
 */
async function measure(
  store: BenchStore,
  databaseEnv: Record<string, string>,
  sizes: { rollouts: number; events: number; pools: number },
  paths: ExecutionPath[],
): Promise<StoreRun> {
  const { pools } = sizes;
  process.stderr.write(`  api: ${STORE_LABEL[store]}: seeding ${sizes.rollouts} rollouts and ${sizes.events} events …\n`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-api-'));
  const sim = await startSimChild({ fleet: `pools=${pools},nodes=3,peers=0`, kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: 512 });
  const env = {
    ROLLPLANE_CONTROLLERS: 'off',
    // The benchmark measures the read path, not the per-caller budget (one address sends everything).
    ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000',
    ROLLPLANE_QUERY_COST_BURST: '1000000000',
    ...databaseEnv,
  };
  const apps: { path: ExecutionPath; app: App }[] = [];
  try {
    const seedStarted = performance.now();
    let lastRollout: string;
    {
      const app = await startBenchApp(dir, sim.kubeconfigPath, env);
      try {
        lastRollout = await seed(app, sizes);
      } finally {
        await app.stop();
      }
    }
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    for (const one of paths) {
      const app = await startBenchApp(dir, sim.kubeconfigPath, { ...env, ...EXECUTION_PATHS[one] });
      apps.push({ path: one, app });
      for (;;) {
        const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }');
        if (data.agentPools.totalCount === pools) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const writesPerSecond = numberFrom('API_BENCH_WRITES_PER_SECOND', 0);
    const writer = writesPerSecond > 0 ? historyWriter(apps[0]!.app, lastRollout, writesPerSecond) : undefined;
    process.stderr.write(`  api: ${STORE_LABEL[store]}: loading ${paths.join(', ')} …\n`);
    const loaded = await loadPaths(apps, store, requestsFor(lastRollout));
    const historyWrites = writer ? await writer.stop() : 0;
    return { store, seedSeconds, writesPerSecond, historyWrites, ...loaded };
  } finally {
    for (const { app } of apps) await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cell = (value: number | string | null | undefined, width: number, digits = 0) =>
  (value === null || value === undefined ? '–' : typeof value === 'number' ? value.toFixed(digits) : value).padStart(width);

/**
 * What one path buys over another, per request, each path's figure taken relative to its own `{ __typename }` in the
 * same run (the servers share the machine, whose speed changes by half from one minute to the next): `cpu` is the ratio
 * of req/CPU-s × base (higher: the first path needs less CPU per request), `median` the ratio of interleaved medians
 * ÷ base median, slower over faster (higher: the first path answers sooner).
 */
interface Gain {
  name: string;
  cpu: Record<string, number | null>;
  median: Record<string, number | null>;
}

const PAIRS: [ExecutionPath, ExecutionPath][] = [['cached', 'interpreted']];

/** A request's interleaved median over its path's baseline median. */
function relativeMedian(run: PathRun, name: string): number | undefined {
  const base = run.interleaved[0]?.medianMs;
  const median = run.interleaved.find((r) => r.name === name)?.medianMs;
  return base && median !== undefined ? median / base : undefined;
}

function gainsOf(run: StoreRun): Gain[] {
  const of = (p: ExecutionPath) => run.paths.find((r) => r.path === p);
  return run.paths[0]!.results.map(({ name }) => {
    const cpu: Record<string, number | null> = {};
    const median: Record<string, number | null> = {};
    for (const [faster, slower] of PAIRS) {
      const a = of(faster);
      const b = of(slower);
      if (!a || !b) continue;
      cpu[`${faster}/${slower}`] = ratioOf(
        a.results.find((r) => r.name === name)?.cpuRatioToBaseline,
        b.results.find((r) => r.name === name)?.cpuRatioToBaseline,
      );
      median[`${faster}/${slower}`] = ratioOf(relativeMedian(b, name), relativeMedian(a, name));
    }
    return { name, cpu, median };
  });
}

/** Per store: each path's req/s, × its own baseline and req/CPU-s side by side, then what each path buys. */
function printStore(run: StoreRun): void {
  const names = run.paths[0]!.results.map((r) => r.name);
  const header = `${'req/s'.padStart(8)} ${'× base'.padStart(7)} ${'req/CPU-s'.padStart(9)} ${'× base'.padStart(7)} ${'med ms'.padStart(7)} ${'cached'.padStart(6)}`;
  process.stdout.write(`\n${STORE_LABEL[run.store]}\n${''.padEnd(40)} ${run.paths.map((p) => `── ${p.path} `.padEnd(header.length, '─')).join(' │ ')}\n`);
  process.stdout.write(`${'request'.padEnd(40)} ${run.paths.map(() => header).join(' │ ')}\n`);
  for (const name of names) {
    const cols = run.paths.map((p) => {
      const r = p.results.find((x) => x.name === name)!;
      const i = p.interleaved.find((x) => x.name === name);
      const unexpected = r.unexpected + (i?.unexpected ?? 0);
      return `${cell(r.requestsPerSecond, 8)} ${cell(r.ratioToBaseline, 7, 3)} ${cell(r.requestsPerCpuSecond, 9)} ${cell(r.cpuRatioToBaseline, 7, 3)} ${cell(i?.medianMs, 7, 2)} ${cell(`${Math.round(r.cachedShare * 100)}%`, 6)}${unexpected ? ` !${unexpected}` : ''}`;
    });
    process.stdout.write(`${name.padEnd(40)} ${cols.join(' │ ')}\n`);
  }
  const gains = gainsOf(run);
  const pairs = Object.keys(gains[0]?.cpu ?? {});
  if (pairs.length === 0) return;
  process.stdout.write(
    `\nwhat each path buys, each relative to its own baseline (req/CPU-s, interleaved median; ≥ 1.5 keeps a path)\n${'request'.padEnd(40)} ${pairs.map((p) => p.padStart(24)).join(' ')}\n`,
  );
  for (const g of gains) {
    process.stdout.write(`${g.name.padEnd(40)} ${pairs.map((p) => `${cell(g.cpu[p], 11, 2)} ${cell(g.median[p], 11, 2)}`.padStart(24)).join(' ')}\n`);
  }
}

export async function run(): Promise<void> {
  const sizes = {
    rollouts: numberFrom('API_BENCH_ROLLOUTS', 1000),
    events: numberFrom('API_BENCH_EVENTS', 100_000),
    pools: numberFrom('API_BENCH_POOLS', 200),
  };
  const paths = pathsFrom(process.env.API_BENCH_PATHS);
  const { runs, skipped } = await forEachStore('API_BENCH_STORES', async (store, databaseEnv) => measure(store, await databaseEnv(), sizes, paths));
  const measured = runs.map((r) => r.result);
  if (measured.length === 0) throw new Error('api: no store was measured');
  process.stdout.write(`rollouts ${sizes.rollouts}, events ${sizes.events}, pools ${sizes.pools}; paths ${paths.join(', ')}\n`);
  for (const r of measured) {
    process.stdout.write(
      `${STORE_LABEL[r.store]}: seeded in ${r.seedSeconds.toFixed(1)} s; machine (calibration) ${r.calibrationMs.toFixed(0)} ms; load average ${r.loadAverage.join(' → ')}; history writes during the load ${r.writesPerSecond}/s (${r.historyWrites} events)\n`,
    );
  }
  if (skipped) process.stdout.write(`PostgreSQL skipped: ${skipped}\n`);
  for (const r of measured) printStore(r);
  const storeSuffix = measured.length === 2 ? '' : measured[0]!.store === 'postgresql' ? '-pg' : '-sqlite';
  const eventsSuffix = sizes.events >= 1_000_000 ? '-1m-events' : sizes.events <= 10_000 ? '-10k-events' : '';
  const file = writeResult(`api${storeSuffix}${eventsSuffix}`, {
    name: 'api',
    date: new Date().toISOString(),
    node: process.version,
    ...sizes,
    paths,
    stores: measured.map((r) => ({ ...r, gains: gainsOf(r) })),
    postgresqlSkipped: skipped ?? null,
  });
  process.stdout.write(`wrote ${file}\n`);
}
