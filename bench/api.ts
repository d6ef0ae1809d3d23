/**
 * API read-path benchmark (issue 17): the real server (compiled) with a simulated fleet of pools and a history of
 * rollouts and events, driven over loopback by autocannon in a separate process (apiLoad.ts), one request kind at a
 * time. The same-run baseline is `{ __typename }` (the framework's floor); every other request is reported as req/s,
 * p50, p99 and its ratio to that baseline. The requests are the ones the UI (src/ui/client/queries.ts), the CLI and CI
 * (src/cli/operations.ts) send, plus a refused mix to show refusals stay cheap.
 *
 * Run: `npm run bench -- api`. Sizes: `API_BENCH_ROLLOUTS` (1000), `API_BENCH_EVENTS` (100000; 10000 and 1000000 to
 * check that history queries do not slow down with history), `API_BENCH_POOLS` (200), `API_BENCH_SECONDS` (8),
 * `API_BENCH_CONNECTIONS` (20).
 *
 * Stores (issue 15, issue 17: the read path measured on both with the same benchmark): SQLite, then the same seed and
 * the same requests on a throwaway PostgreSQL server (the tests' helper: initdb in a temporary directory, fsync off),
 * each with a fresh server and simulator and its own same-run baseline, then one table with both side by side and
 * PostgreSQL ÷ SQLite. Where PostgreSQL's binaries are missing, a line says so and only SQLite is measured.
 * `API_BENCH_STORES` (sqlite,postgresql) picks the stores (a store named there alone must run: missing binaries are
 * then an error). Writes bench/results/api[-sqlite|-pg][-10k-events|-1m-events].json (no store suffix with both).
 *
 * `ROLLPLANE_GRAPHQL_COMPILE_AFTER=off` runs the server with graphql-js alone (ADR 0025), for an A/B of the executor;
 * `ROLLPLANE_RESPONSE_CACHE_MB=0` runs it without the response cache (ADR 0026). With the cache on, a quiet history
 * makes every repeated query a hit, which is the case between rollouts but not during one:
 * `API_BENCH_WRITES_PER_SECOND` (0) appends that many events per second to the history while the load runs (each a
 * commit, so each ends every kept answer), and the "cached" column shows the share of requests the cache answered.
 *
 * Besides req/s (which on a shared machine measures the machine as much as the server), each request kind reports
 * requests per CPU-second of the server's process, and its ratio to the baseline's. `BENCH_CPU_PROFILE=<dir>` writes
 * one V8 CPU profile of the server per request kind (the load window only). Then `API_BENCH_INTERLEAVED_ROUNDS` (300)
 * rounds of every kind in turn on one connection give each kind's median latency beside the baseline's under the same
 * machine load (0 skips them).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventType } from '../src/domain/events.js';
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { DRIFT, AGENT_POOLS, EVENTS, ROLLOUT_DETAIL, ROLLOUT_TARGETS, ROLLOUTS } from '../src/ui/client/queries.js';
import { ROLLOUT_QUERY } from '../src/cli/operations.js';
import type { InterleavedResult, LoadJob, LoadRequest, LoadResult } from './apiLoad.js';
import type { App } from '../src/app.js';
import { calibrationMs, post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';
import { type BenchStore, forEachStore, ratioOf, STORE_LABEL } from './stores.js';
import { defaultStrategy } from '../src/domain/kinds/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const numberFrom = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

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

type Row = LoadResult & { requestsPerCpuSecond: number; ratioToBaseline: number; cpuRatioToBaseline: number; cachedShare: number };

/** One store's measurements: its own seed, server and same-run baseline. */
interface StoreRun {
  store: BenchStore;
  seedSeconds: number;
  calibrationMs: number;
  /** os.loadavg()[0] at the start and the end of the store's load: these machines are shared. */
  loadAverage: [number, number];
  serverCpuSeconds: number;
  /** API_BENCH_WRITES_PER_SECOND, and the events the writer appended while the load ran. */
  writesPerSecond: number;
  historyWrites: number;
  results: Row[];
  interleaved: InterleavedResult[];
}

const round1 = (n: number) => Math.round(n * 10) / 10;

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
        payload: { oldImage: 'agent:v1', newImage: 'agent:v2', seconds: 3.2 },
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

/** Seeds a fresh server on `store`, then loads it with each request kind in turn. */
async function measure(store: BenchStore, databaseEnv: Record<string, string>, sizes: { rollouts: number; events: number; pools: number }): Promise<StoreRun> {
  const { rollouts, events, pools } = sizes;
  process.stderr.write(`  api: ${STORE_LABEL[store]}: seeding ${rollouts} rollouts and ${events} events …\n`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-api-'));
  const sim = await startSimChild({ fleet: `pools=${pools},nodes=3,peers=0`, kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: 512 });
  const app = await startBenchApp(dir, sim.kubeconfigPath, {
    ROLLPLANE_CONTROLLERS: 'off',
    // The benchmark measures the read path, not the per-caller budget (one address sends everything).
    ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000',
    ROLLPLANE_QUERY_COST_BURST: '1000000000',
    ...databaseEnv,
  });
  try {
    const seedStarted = performance.now();
    let lastRollout = '';
    for (let i = 0; i < rollouts; i++) {
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
        strategy: defaultStrategy('AGENT_POOL'),
        cause: { actor: `ci-${i % 7}`, commit: `c${i}`, message: `release ${i}` },
        targets,
      });
      lastRollout = rollout.id;
    }
    const already = await app.domain.events.lastEventId();
    for (let written = already; written < events; written += 1000) {
      const batch = Array.from({ length: Math.min(1000, events - written) }, (_, i) => ({
        type: EventType.AgentRecreated,
        rolloutId: lastRollout,
        kind: 'AGENT_POOL' as const,
        namespace: 'default',
        name: `pool-${(written + i) % 200}`,
        payload: { oldImage: 'agent:v1', newImage: 'agent:v2', seconds: 3.2 },
      }));
      await app.domain.events.append(...batch);
    }
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    for (;;) {
      const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }');
      if (data.agentPools.totalCount === pools) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const requests = [
      request('{ __typename } (baseline)', '{ __typename }'),
      request('UI: rollouts list (first 20)', ROLLOUTS, { first: 20 }),
      request('UI: rollout detail', ROLLOUT_DETAIL, { id: lastRollout }),
      request('UI: rollout targets (first 50)', ROLLOUT_TARGETS, { id: lastRollout, first: 50 }),
      request('UI: events page (first 50)', EVENTS, { first: 50 }),
      request('UI: events of one pool (first 50)', EVENTS, { first: 50, filter: { namespace: 'default', name: 'pool-7' } }),
      request('UI: agentPools page (first 100)', AGENT_POOLS, { first: 100 }),
      request('UI: drift (first 50)', DRIFT, { first: 50 }),
      request('CLI --wait: rollout(id)', ROLLOUT_QUERY, { id: lastRollout }),
      request(
        'refused: over the cost limit',
        `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: rollouts(first: 100) { edges { node { id state kind toVersion fromVersion progress { total succeeded } } } }`).join(' ')} }`,
        {},
        400,
      ),
      request('refused: unknown field', '{ nope }', {}, 400),
    ];
    const writesPerSecond = numberFrom('API_BENCH_WRITES_PER_SECOND', 0);
    const writer = writesPerSecond > 0 ? historyWriter(app, lastRollout, writesPerSecond) : undefined;
    const calibration = calibrationMs();
    const loadAtStart = os.loadavg()[0]!;
    const cpuBefore = process.cpuUsage();
    // One load child per request, so that BENCH_CPU_PROFILE=<dir> records one profile of the server per request kind.
    const results: (LoadResult & { requestsPerCpuSecond: number; cachedShare: number })[] = [];
    for (const [i, one] of requests.entries()) {
      const profiler = windowProfiler(`api-${store}-${String(i).padStart(2, '0')}-${one.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`);
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
      const ran = (executor: string) => (executionsAfter[executor] ?? 0) - (executionsBefore[executor] ?? 0);
      const all = ['compiled', 'interpreted', 'fallback', 'cached'].reduce((sum, executor) => sum + ran(executor), 0);
      // Requests per CPU-second of the server's process: steadier than req/s on a machine shared with other work.
      results.push({ ...result!, requestsPerCpuSecond: result!.total / ((user + system) / 1e6), cachedShare: all > 0 ? ran('cached') / all : 0 });
      await profiler.stop();
    }
    const cpu = process.cpuUsage(cpuBefore);
    const historyWrites = writer ? await writer.stop() : 0;
    const rounds = numberFrom('API_BENCH_INTERLEAVED_ROUNDS', 300);
    const interleaved = rounds > 0 ? await runLoad({ url: app.url, connections: 1, seconds: 0, requests, interleavedRounds: rounds }) : [];
    const baseline = results[0]!;
    const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
    return {
      store,
      seedSeconds,
      calibrationMs: calibration,
      loadAverage: [round1(loadAtStart), round1(os.loadavg()[0]!)],
      serverCpuSeconds: (cpu.user + cpu.system) / 1e6,
      writesPerSecond,
      historyWrites,
      results: results.map((r) => ({
        ...r,
        requestsPerCpuSecond: Math.round(r.requestsPerCpuSecond),
        ratioToBaseline: ratio(r.requestsPerSecond, baseline.requestsPerSecond),
        cpuRatioToBaseline: ratio(r.requestsPerCpuSecond, baseline.requestsPerCpuSecond),
      })),
      interleaved,
    };
  } finally {
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cell = (value: number | string | null | undefined, width: number, digits = 0) =>
  (value === null || value === undefined ? '–' : typeof value === 'number' ? value.toFixed(digits) : value).padStart(width);

/** One line per request: each store's req/s, p50, p99 and ratio to its own baseline side by side, then PG ÷ SQLite. */
function printSideBySide(runs: StoreRun[]): void {
  const sqlite = runs.find((r) => r.store === 'sqlite');
  const pg = runs.find((r) => r.store === 'postgresql');
  const names = runs[0]!.results.map((r) => r.name);
  const group = (label: string, cols: string) => `${label.padEnd(cols.length)}`;
  const storeHeader = `${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'× base'.padStart(7)}`;
  const both = sqlite && pg;
  process.stdout.write(
    `\n${''.padEnd(40)} ${runs.map((r) => group(`── ${STORE_LABEL[r.store]} `.padEnd(storeHeader.length, '─'), storeHeader)).join(' │ ')}${both ? ` │ ${'── PG ÷ SQLite ─────────'}` : ''}\n`,
  );
  process.stdout.write(
    `${'request'.padEnd(40)} ${runs.map(() => storeHeader).join(' │ ')}${both ? ` │ ${'req/s'.padStart(7)} ${'p50'.padStart(6)} ${'× base'.padStart(7)}` : ''}\n`,
  );
  for (const name of names) {
    const of = (run: StoreRun | undefined) => run?.results.find((r) => r.name === name);
    const cols = runs.map((run) => {
      const r = of(run)!;
      return `${cell(r.requestsPerSecond, 8)} ${cell(r.p50Ms, 7)} ${cell(r.p99Ms, 7)} ${cell(r.ratioToBaseline, 7, 3)}`;
    });
    let tail = '';
    if (both) {
      const a = of(sqlite)!;
      const b = of(pg)!;
      tail = ` │ ${cell(ratioOf(b.requestsPerSecond, a.requestsPerSecond), 7, 3)} ${cell(ratioOf(b.p50Ms, a.p50Ms), 6, 2)} ${cell(ratioOf(b.ratioToBaseline, a.ratioToBaseline), 7, 3)}`;
    }
    process.stdout.write(`${name.padEnd(40)} ${cols.join(' │ ')}${tail}\n`);
  }
  if (both) process.stdout.write('PG ÷ SQLite: req/s and × base below 1, or p50 above 1, mean PostgreSQL is slower for that request.\n');
  // Requests per CPU-second of the server and the interleaved medians: steadier than req/s on a shared machine.
  process.stdout.write(
    `\n${'request'.padEnd(40)} ${runs.map((r) => `${`${STORE_LABEL[r.store]} req/CPU-s`.padStart(22)} ${'× base'.padStart(7)} ${'median ms'.padStart(10)} ${'cached'.padStart(7)} ${'unexp.'.padStart(6)}`).join(' │ ')}\n`,
  );
  for (const name of names) {
    const cols = runs.map((run) => {
      const r = run.results.find((x) => x.name === name)!;
      const i = run.interleaved.find((x) => x.name === name);
      return `${cell(r.requestsPerCpuSecond, 22)} ${cell(r.cpuRatioToBaseline, 7, 3)} ${cell(i?.medianMs, 10, 3)} ${cell(`${Math.round(r.cachedShare * 100)}%`, 7)} ${cell(r.unexpected + (i?.unexpected ?? 0), 6)}`;
    });
    process.stdout.write(`${name.padEnd(40)} ${cols.join(' │ ')}\n`);
  }
}

export async function run(): Promise<void> {
  const sizes = {
    rollouts: numberFrom('API_BENCH_ROLLOUTS', 1000),
    events: numberFrom('API_BENCH_EVENTS', 100_000),
    pools: numberFrom('API_BENCH_POOLS', 200),
  };
  const { runs, skipped } = await forEachStore('API_BENCH_STORES', async (store, databaseEnv) => measure(store, await databaseEnv(), sizes));
  const measured = runs.map((r) => r.result);
  if (measured.length === 0) throw new Error('api: no store was measured');
  process.stdout.write(`rollouts ${sizes.rollouts}, events ${sizes.events}, pools ${sizes.pools}\n`);
  for (const r of measured) {
    process.stdout.write(
      `${STORE_LABEL[r.store]}: seeded in ${r.seedSeconds.toFixed(1)} s; machine (calibration) ${r.calibrationMs.toFixed(0)} ms; load average ${r.loadAverage.join(' → ')}; history writes during the load ${r.writesPerSecond}/s (${r.historyWrites} events)\n`,
    );
  }
  if (skipped) process.stdout.write(`PostgreSQL skipped: ${skipped}\n`);
  printSideBySide(measured);
  const storeSuffix = measured.length === 2 ? '' : measured[0]!.store === 'postgresql' ? '-pg' : '-sqlite';
  const eventsSuffix = sizes.events >= 1_000_000 ? '-1m-events' : sizes.events <= 10_000 ? '-10k-events' : '';
  const sqlite = measured.find((r) => r.store === 'sqlite');
  const pg = measured.find((r) => r.store === 'postgresql');
  const file = writeResult(`api${storeSuffix}${eventsSuffix}`, {
    name: 'api',
    date: new Date().toISOString(),
    node: process.version,
    ...sizes,
    stores: measured,
    postgresqlSkipped: skipped ?? null,
    postgresqlToSqlite:
      sqlite && pg
        ? sqlite.results.map((a) => {
            const b = pg.results.find((r) => r.name === a.name)!;
            return {
              name: a.name,
              requestsPerSecond: ratioOf(b.requestsPerSecond, a.requestsPerSecond),
              p50Ms: ratioOf(b.p50Ms, a.p50Ms),
              p99Ms: ratioOf(b.p99Ms, a.p99Ms),
              ratioToBaseline: ratioOf(b.ratioToBaseline, a.ratioToBaseline),
              requestsPerCpuSecond: ratioOf(b.requestsPerCpuSecond, a.requestsPerCpuSecond),
            };
          })
        : null,
  });
  process.stdout.write(`wrote ${file}\n`);
}
