/**
 * API read-path benchmark (issue 17): the real server (compiled) with a simulated fleet of pools and a history of
 * rollouts and events, driven over loopback by autocannon in a separate process (apiLoad.ts), one request kind at a
 * time. The same-run baseline is `{ __typename }` (the framework's floor); every other request is reported as req/s,
 * p50, p99 and its ratio to that baseline. The requests are the ones the UI (src/ui/client/queries.ts), the CLI and CI
 * (src/cli/operations.ts) send, plus a refused mix to show refusals stay cheap.
 *
 * Run: `npm run bench -- api`. Sizes: `API_BENCH_ROLLOUTS` (1000), `API_BENCH_EVENTS` (100000; 10000 and 1000000 to
 * check that history queries do not slow down with history), `API_BENCH_POOLS` (200), `API_BENCH_SECONDS` (8),
 * `API_BENCH_CONNECTIONS` (20). `API_BENCH_STORE=postgresql` runs it on a throwaway PostgreSQL server instead of SQLite.
 * Writes bench/results/api[-pg][-10k-events|-1m-events].json.
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
import { calibrationMs, post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';
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

/**
 * With `API_BENCH_STORE=postgresql`, a throwaway PostgreSQL server (the tests' helper: initdb in a temporary directory,
 * fsync off) and an empty database on it, handed to the service as BENCH_DATABASE_URL. Imported only then: the helper
 * lives with the tests.
 */
async function throwawayPostgres(): Promise<{ stop(): Promise<void> } | undefined> {
  if (process.env.API_BENCH_STORE !== 'postgresql') return undefined;
  const { findPostgresBinaries, startPostgres } = await import('../test/helpers/postgres.js');
  const binaries = findPostgresBinaries();
  if (!binaries) throw new Error('API_BENCH_STORE=postgresql: no PostgreSQL binaries (initdb, pg_ctl, postgres) found');
  const server = await startPostgres(binaries);
  process.env.BENCH_DATABASE_URL = await server.createDatabase('rollplane_bench');
  return server;
}

export async function run(): Promise<void> {
  const rollouts = numberFrom('API_BENCH_ROLLOUTS', 1000);
  const events = numberFrom('API_BENCH_EVENTS', 100_000);
  const pools = numberFrom('API_BENCH_POOLS', 200);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-api-'));
  const postgres = await throwawayPostgres();
  const sim = await startSimChild({ fleet: `pools=${pools},nodes=3,peers=0`, kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: 512 });
  const app = await startBenchApp(dir, sim.kubeconfigPath, {
    ROLLPLANE_CONTROLLERS: 'off',
    // The benchmark measures the read path, not the per-caller budget (one address sends everything).
    ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000',
    ROLLPLANE_QUERY_COST_BURST: '1000000000',
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
    const calibration = calibrationMs();
    const cpuBefore = process.cpuUsage();
    // One load child per request, so that BENCH_CPU_PROFILE=<dir> records one profile of the server per request kind.
    const results: (LoadResult & { requestsPerCpuSecond: number })[] = [];
    for (const [i, one] of requests.entries()) {
      const profiler = windowProfiler(`api-${String(i).padStart(2, '0')}-${one.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`);
      await profiler.start();
      const cpuOfOne = process.cpuUsage();
      const [result] = await runLoad({
        url: app.url,
        connections: numberFrom('API_BENCH_CONNECTIONS', 20),
        seconds: numberFrom('API_BENCH_SECONDS', 8),
        requests: [one],
      });
      const { user, system } = process.cpuUsage(cpuOfOne);
      // Requests per CPU-second of the server's process: steadier than req/s on a machine shared with other work.
      results.push({ ...result!, requestsPerCpuSecond: result!.total / ((user + system) / 1e6) });
      await profiler.stop();
    }
    const cpu = process.cpuUsage(cpuBefore);
    const rounds = numberFrom('API_BENCH_INTERLEAVED_ROUNDS', 300);
    const interleaved = rounds > 0 ? await runLoad({ url: app.url, connections: 1, seconds: 0, requests, interleavedRounds: rounds }) : [];
    const baseline = results[0]!;
    const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
    const rows = results.map((r) => ({
      ...r,
      requestsPerCpuSecond: Math.round(r.requestsPerCpuSecond),
      ratioToBaseline: ratio(r.requestsPerSecond, baseline.requestsPerSecond),
      cpuRatioToBaseline: ratio(r.requestsPerCpuSecond, baseline.requestsPerCpuSecond),
    }));
    process.stdout.write(
      `rollouts ${rollouts}, events ${events}, pools ${pools}; seeded in ${seedSeconds.toFixed(1)} s; machine (calibration) ${calibration.toFixed(0)} ms\n`,
    );
    process.stdout.write(
      `${'request'.padEnd(40)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'× base'.padStart(7)} ${'req/CPU-s'.padStart(10)} ${'× base'.padStart(7)} ${'unexp.'.padStart(7)}\n`,
    );
    for (const r of rows) {
      process.stdout.write(
        `${r.name.padEnd(40)} ${r.requestsPerSecond.toFixed(0).padStart(8)} ${String(r.p50Ms).padStart(7)} ${String(r.p99Ms).padStart(7)} ${r.ratioToBaseline.toFixed(3).padStart(7)} ${String(r.requestsPerCpuSecond).padStart(10)} ${r.cpuRatioToBaseline.toFixed(3).padStart(7)} ${String(r.unexpected).padStart(7)}\n`,
      );
    }
    const store = process.env.API_BENCH_STORE === 'postgresql' ? 'postgresql' : 'sqlite';
    process.stdout.write(`store ${store}\n`);
    if (interleaved.length > 0) {
      const base = interleaved[0]!.medianMs;
      process.stdout.write(`\ninterleaved, one connection, ${rounds} rounds (each kind in turn: the same machine for all)\n`);
      process.stdout.write(`${'request'.padEnd(40)} ${'median ms'.padStart(10)} ${'p90 ms'.padStart(8)} ${'base/this'.padStart(10)} ${'unexp.'.padStart(7)}\n`);
      for (const r of interleaved) {
        process.stdout.write(
          `${r.name.padEnd(40)} ${r.medianMs.toFixed(3).padStart(10)} ${r.p90Ms.toFixed(3).padStart(8)} ${(base / r.medianMs).toFixed(3).padStart(10)} ${String(r.unexpected).padStart(7)}\n`,
        );
      }
    }
    const file = writeResult(`api${store === 'postgresql' ? '-pg' : ''}${events >= 1_000_000 ? '-1m-events' : events <= 10_000 ? '-10k-events' : ''}`, {
      store,
      rollouts,
      events,
      pools,
      seedSeconds,
      calibrationMs: calibration,
      serverCpuSeconds: (cpu.user + cpu.system) / 1e6,
      results: rows,
      interleaved,
    });
    process.stdout.write(`wrote ${file}\n`);
  } finally {
    await app.stop();
    await sim.stop();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
