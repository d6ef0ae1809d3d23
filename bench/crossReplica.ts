/**
 * Cross-replica feed benchmark (issue 15): two rollplane replicas on one PostgreSQL database. Replica A (a child
 * process running the compiled server, controllers on) runs an agent-pool rollout over a simulated fleet (simulator in
 * another child); replica B (this process, API only) learns of A's commits through LISTEN/NOTIFY and reads them by id.
 * One graphql-ws subscriber to `events` on each replica, in this process. Measured per event: commit (its `createdAt`,
 * stamped by A just before the transaction, on the same host clock) → delivery to the subscriber, on A (same replica)
 * and on B (the other replica), p50/p99/max; plus missing, duplicated and out-of-order events on B.
 *
 * Needs a PostgreSQL database: `BENCH_DATABASE_URL=postgresql://… npm run bench -- cross-replica` (an empty database
 * is fairest; the committed migrations are applied at start). `CROSS_BENCH_POOLS` (200). `CROSS_BENCH_PACE`: `flat-out`
 * (default: no simulated delays, the rollout as fast as the CPU allows) or `natural` (the simulator's default pod
 * delays: the event rate a rollout produces by itself, which issue 15's aim names).
 * Prints a table and writes bench/results/cross-replica.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { post, startBenchApp } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const QUERY = 'subscription Feed($after: ID) { events(after: $after) { id type payload createdAt } }';

interface Feed {
  latencies: number[];
  ids: number[];
  ended: Promise<void>;
}

function subscribe(client: Client, after: string): Feed {
  const latencies: number[] = [];
  const ids: number[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    client.subscribe<{ events: { id: string; type: string; payload: Record<string, unknown>; createdAt: string } }>(
      { query: QUERY, variables: { after } },
      {
        next: ({ data, errors }) => {
          if (errors || !data) return reject(new Error(JSON.stringify(errors)));
          const received = Date.now();
          latencies.push(received - Date.parse(data.events.createdAt));
          ids.push(Number(data.events.id));
          if (data.events.type === 'RolloutStateChanged' && data.events.payload.to === 'SUCCEEDED') resolve();
        },
        error: reject,
        complete: () => undefined,
      },
    );
  });
  return { latencies, ids, ended };
}

function quantile(sorted: number[], q: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Starts the compiled server (dist/src/main.js) as replica A and resolves with its GraphQL URL. */
function startReplica(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const main = path.join(HERE, '..', 'src', 'main.js');
  const child = spawn(process.execPath, ['--max-old-space-size=512', main], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /rollplane listening on (\S+)/.exec(out);
      if (match) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`replica A exited with ${code} before listening:\n${out}`)));
  });
}

export async function run(): Promise<unknown> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  if (!databaseUrl?.startsWith('postgres')) throw new Error('cross-replica needs BENCH_DATABASE_URL=postgresql://… (an empty database)');
  const pools = Number(process.env.CROSS_BENCH_POOLS ?? 200);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-cross-'));
  const pace = process.env.CROSS_BENCH_PACE === 'natural' ? 'natural' : 'flat-out';
  const sim = await startSimChild({ fleet: `pools=${pools},nodes=3,peers=0`, kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: 512, pace });
  const common = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    ROLLPLANE_KUBE: 'kubeconfig',
    KUBECONFIG: sim.kubeconfigPath,
    ROLLPLANE_AUTH: 'off',
    ROLLPLANE_LEADER_ELECT: 'false',
  };
  const a = await startReplica({ ...common, ROLLPLANE_KUBE_QPS: '100000', ROLLPLANE_KUBE_BURST: '100000' });
  const b = await startBenchApp(dir, sim.kubeconfigPath, { ...common, ROLLPLANE_CONTROLLERS: 'off' });
  const clients: Client[] = [];
  try {
    for (;;) {
      const data = await post(a.url, '{ agentPools(first: 1) { totalCount } }');
      if (data.agentPools.totalCount === pools) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const after = String((await post(b.url, '{ serverInfo { lastEventId } }')).serverInfo.lastEventId);
    const client = (url: string) => {
      const c = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
      clients.push(c);
      return c;
    };
    const onA = subscribe(client(a.url), after);
    const onB = subscribe(client(b.url), after);
    await sim.start();
    const started = Date.now();
    await post(a.url, 'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable: '25%' } },
    });
    await Promise.all([onA.ended, onB.ended]);
    const rolloutSeconds = (Date.now() - started) / 1000;
    const row = (replica: string, feed: Feed) => {
      const sorted = [...feed.latencies].sort((x, y) => x - y);
      return { replica, events: feed.ids.length, p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), maxMs: sorted.at(-1) ?? null };
    };
    const outOfOrder = onB.ids.filter((id, i) => i > 0 && id <= onB.ids[i - 1]!).length;
    const missing = onA.ids.filter((id) => !onB.ids.includes(id)).length;
    const result = {
      pools,
      rolloutSeconds,
      eventsPerSecond: Math.round(onA.ids.length / rolloutSeconds),
      rows: [row('A (same replica)', onA), row('B (other replica)', onB)],
      onB: { missing, duplicates: onB.ids.length - new Set(onB.ids).size, outOfOrder },
      loadAverage: Math.round(os.loadavg()[0]! * 10) / 10,
    };
    process.stdout.write(
      `pools ${pools}, ${pace} pace, rollout ${rolloutSeconds.toFixed(1)} s, ${result.eventsPerSecond} events/s, load ${result.loadAverage}\n`,
    );
    process.stdout.write('subscriber on         events  p50 ms  p99 ms  max ms\n');
    for (const r of result.rows)
      process.stdout.write(
        `${r.replica.padEnd(20)} ${String(r.events).padStart(7)} ${String(r.p50Ms).padStart(7)} ${String(r.p99Ms).padStart(7)} ${String(r.maxMs).padStart(7)}\n`,
      );
    process.stdout.write(`on B: missing ${missing}, duplicates ${result.onB.duplicates}, out of order ${outOfOrder}\n`);
    process.stdout.write(`written to ${writeResult('cross-replica', result)}\n`);
    return result;
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
    await b.stop();
    a.child.kill('SIGTERM');
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
