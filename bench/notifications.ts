/**
 * Notifications benchmark (issue 32, docs/adr/0035): the real service, its outbox and its leader's dispatcher, with
 * local receivers (the rollouts' in a child process).
 *
 * 1. The cost of the outbox on a rollout: an agent-pool rollout of NOTIFY_BENCH_POOLS pools (500) with maxUnavailable
 *    100% against the simulator in a child process (no delays), in three configurations run alternately
 *    NOTIFY_BENCH_ROUNDS times (3) in the same run: no subscription; a subscription to every event with a receiver
 *    answering 200 at once; the same with a receiver that never answers (every attempt waits out the 10 s timeout).
 *    Measured: time to SUCCEEDED and the service's CPU per agent; the ratio of each configuration's median to the one
 *    without a subscription is the outbox's cost (and, for the hanging receiver, proof that a slow sink does not slow
 *    the rollout: nothing is sent from the rollout's path).
 * 2. Delivery latency: NOTIFY_BENCH_RATE events per second (100) appended one per transaction for
 *    NOTIFY_BENCH_SECONDS (20), each delivered to a receiver answering 200; from the event's commit (its createdAt) to
 *    the receiver having the whole request: p50, p99, max. On SQLite, and on a throwaway PostgreSQL where its binaries
 *    are found.
 *
 * Prints tables and writes bench/results/notifications.json. Run: `npm run bench -- notifications`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../src/app.js';
import { EventType } from '../src/domain/events.js';
import { Receiver } from '../test/helpers/receiver.js';
import { calibrationMs, post, startBenchApp } from './benchApp.js';
import { writeResult } from './results.js';
import { startInlineSim, startSimChild } from './simChild.js';

const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const NOTIFY_ENV = { ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8', ROLLPLANE_MUTATIONS_PER_MINUTE: '100000' };
const CREATE = 'mutation C($input: CreateNotificationSubscriptionInput!) { createNotificationSubscription(input: $input) { subscription { id } } }';

type Sink = 'none' | 'receiver answering 200' | 'receiver that hangs';

interface RolloutRun {
  sink: Sink;
  round: number;
  pools: number;
  secondsToSucceeded: number;
  serviceCpuMsPerAgent: number;
  /** Delivery rows the rollout's events made, and how many were delivered by the time it succeeded. */
  deliveries: number;
  deliveredWhenSucceeded: number;
  calibrationMs: number;
}

async function subscribe(app: App, receiver: Pick<Receiver, 'url'>, path: string): Promise<void> {
  await post(app.url, CREATE, { input: { name: `bench ${path}`, sink: { kind: 'WEBHOOK', url: receiver.url(path) } } });
}

async function rolloutOnce(sink: Sink, round: number, pools: number, receiver: Pick<Receiver, 'url'>): Promise<RolloutRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-notify-'));
  const calibration = calibrationMs();
  const sim = await startSimChild({
    fleet: `pools=${pools},nodes=${Math.max(3, Math.ceil(pools / 100))},peers=0`,
    kubeconfigPath: path.join(dir, 'kubeconfig'),
    heapMb: 512,
  });
  const app = await startBenchApp(dir, sim.kubeconfigPath, NOTIFY_ENV);
  try {
    for (;;) {
      const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }');
      if (data.agentPools.totalCount === pools) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (sink !== 'none') await subscribe(app, receiver, sink === 'receiver that hangs' ? '/hang' : '/fast');
    const ended = new Promise<string>((resolve) => {
      const unsubscribe = app.bus.subscribe((event) => {
        if (event.type === 'RolloutStateChanged' && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(String(event.payload.to))) {
          unsubscribe();
          resolve(String(event.payload.to));
        }
      });
    });
    await sim.start();
    const cpu = process.cpuUsage();
    const started = Date.now();
    await post(app.url, 'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable: '100%' } },
    });
    const state = await ended;
    const seconds = (Date.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    if (state !== 'SUCCEEDED') throw new Error(`rollout ended ${state}`);
    const counts = sink === 'none' ? undefined : [...(await app.db.notifications.deliveryCounts(await app.db.notifications.subscriptionIds())).values()][0];
    return {
      sink,
      round,
      pools,
      secondsToSucceeded: Math.round(seconds * 100) / 100,
      serviceCpuMsPerAgent: Math.round(((used.user + used.system) / 1000 / pools) * 100) / 100,
      deliveries: counts ? counts.pending + counts.delivered + counts.deadLettered : 0,
      deliveredWhenSucceeded: counts?.delivered ?? 0,
      calibrationMs: calibration,
    };
  } finally {
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface LatencyRun {
  store: 'sqlite' | 'postgresql';
  eventsPerSecond: number;
  events: number;
  delivered: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * The rollouts' receiver, in a child process of its own, as a receiver would be: the service's CPU figure then counts
 * only the service. Answers 200 on /fast and never on /hang.
 */
const RECEIVER_SCRIPT = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { if (req.url !== '/hang') res.end(); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

async function startReceiverChild(): Promise<{ url(path: string): string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', RECEIVER_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the receiver exited with ${code}`)));
  });
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    async stop() {
      child.kill();
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

async function latencyOnce(receiver: Receiver, rate: number, seconds: number, postgresUrl?: string): Promise<LatencyRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-notify-latency-'));
  const sim = await startInlineSim({ fleet: 'pools=1,nodes=1,peers=0', kubeconfigPath: path.join(dir, 'kubeconfig') });
  const app = await startBenchApp(dir, sim.kubeconfigPath, { ...NOTIFY_ENV, ...(postgresUrl ? { DATABASE_URL: postgresUrl } : {}) });
  const receivedPath = `/latency-${postgresUrl ? 'pg' : 'sqlite'}`;
  try {
    await subscribe(app, receiver, receivedPath);
    const committedAt = new Map<string, number>();
    const total = rate * seconds;
    const started = Date.now();
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const [event] = await app.domain.events.append({
        type: EventType.RolloutStateChanged,
        rolloutId: `ro_bench_${i}`,
        kind: 'AGENT_POOL',
        payload: { from: 'PENDING', to: 'PROGRESSING' },
      });
      committedAt.set(String(event!.id), event!.createdAt.getTime());
    }
    const deadline = Date.now() + 60_000;
    while (receiver.distinctIds(receivedPath).length < total && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const firstArrival = new Map<string, number>();
    for (const r of receiver.at(receivedPath)) if (!firstArrival.has(String(r.json?.id))) firstArrival.set(String(r.json?.id), r.at);
    const latencies = [...firstArrival].map(([id, at]) => at - committedAt.get(id)!).sort((a, b) => a - b);
    return {
      store: postgresUrl ? 'postgresql' : 'sqlite',
      eventsPerSecond: rate,
      events: total,
      delivered: latencies.length,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: latencies.at(-1) ?? Number.NaN,
    };
  } finally {
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function run(): Promise<unknown> {
  const pools = Number(process.env.NOTIFY_BENCH_POOLS ?? '500');
  const rounds = Number(process.env.NOTIFY_BENCH_ROUNDS ?? '3');
  const rate = Number(process.env.NOTIFY_BENCH_RATE ?? '100');
  const seconds = Number(process.env.NOTIFY_BENCH_SECONDS ?? '20');
  const receiver = await Receiver.start();
  const rolloutReceiver = await startReceiverChild();
  try {
    const rollouts: RolloutRun[] = [];
    const sinks: Sink[] = ['none', 'receiver answering 200', 'receiver that hangs'];
    for (let round = 1; round <= rounds; round++) {
      // Alternated, so that the machine's drift over the run falls on every configuration alike.
      for (const sink of round % 2 ? sinks : [...sinks].reverse()) {
        process.stderr.write(`  rollout of ${pools} pools, ${sink}, round ${round}\n`);
        rollouts.push(await rolloutOnce(sink, round, pools, rolloutReceiver));
      }
    }
    console.table(rollouts.map((r) => ({ ...r })));
    const baseline = median(rollouts.filter((r) => r.sink === 'none').map((r) => r.secondsToSucceeded));
    const baselineCpu = median(rollouts.filter((r) => r.sink === 'none').map((r) => r.serviceCpuMsPerAgent));
    const ratios = sinks.map((sink) => {
      const runs = rollouts.filter((r) => r.sink === sink);
      return {
        sink,
        'median time to SUCCEEDED (s)': median(runs.map((r) => r.secondsToSucceeded)),
        'ratio to no subscription': Math.round((median(runs.map((r) => r.secondsToSucceeded)) / baseline) * 1000) / 1000,
        'median service CPU ms/agent': median(runs.map((r) => r.serviceCpuMsPerAgent)),
        'CPU ratio': Math.round((median(runs.map((r) => r.serviceCpuMsPerAgent)) / baselineCpu) * 1000) / 1000,
      };
    });
    console.table(ratios);

    const latencies: LatencyRun[] = [await latencyOnce(receiver, rate, seconds)];
    const { findPostgresBinaries, startPostgres } = await import('../test/helpers/postgres.js');
    const binaries = findPostgresBinaries();
    if (!binaries) process.stderr.write('  no PostgreSQL binaries: the PostgreSQL latency run is skipped\n');
    else {
      const server = await startPostgres(binaries);
      try {
        latencies.push(await latencyOnce(receiver, rate, seconds, await server.createDatabase('rollplane_bench_notify')));
      } finally {
        await server.stop();
      }
    }
    console.table(latencies);
    const result = { name: 'notifications', date: new Date().toISOString(), node: process.version, rollouts, ratios, latencies };
    writeResult('notifications', result);
    return result;
  } finally {
    await receiver.close();
    await rolloutReceiver.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
