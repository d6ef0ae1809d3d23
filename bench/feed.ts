/**
 * Live-feed benchmark (issue 17 item 3): the real server (compiled, production mode, in this process) with a simulated
 * fleet of 200 pools (simulator in a child process), 1,000 graphql-ws subscribers to `events` in another child
 * process (feedClients.ts), and one agent-pool rollout over every pool at maxUnavailable 25%. Measured: commit → client
 * latency p50/p99 (each event's `createdAt` is stamped at commit, read by the clients on the same clock), deliveries
 * per second, the server's CPU (process.cpuUsage of this process, which is the server) per delivery, and its peak RSS.
 * Beside the clients' latency, the server's own share of it: commit → the message written to that subscriber's socket,
 * sampled by the server per delivery (rollplane_subscription_handoff_lag_seconds, one live subscriber in 16), so
 * that what the server does and what the clients' process on the same two cores adds are told apart. The run fails
 * when a subscriber did not get every event once and in order.
 *
 * Same-run comparison, one fresh server each: `none` (the rollout without subscribers: what the rollout itself costs),
 * and `shared` (the fan-out: one execution per event and distinct operation). (`per-subscriber`, graphql-ws executing
 * every subscriber's payload, was measured here too until ADR 0039 deleted it: it missed the aim by 10–60×.)
 * "net CPU/delivery" subtracts the `none` run's CPU.
 *
 * Pace: those three runs are `flat-out` (no simulated delays: the rollout runs as fast as two cores allow, and the
 * server, the simulator and the 1,000 clients compete for them, so latency there measures CPU starvation as much as the
 * feed). A fourth run, `shared` at the `natural` pace (the simulator's default pod delays, about 1.5 s from create to
 * Ready), gives the latency at the event rate a rollout produces by itself.
 *
 * Stores (issue 15): every run above on SQLite, then again on a throwaway PostgreSQL server (the tests' helper; a fresh
 * database per run), then PostgreSQL ÷ SQLite per mode and pace. On PostgreSQL the server publishes what the store
 * holds in id order (EventLog's publishFromStore): its own commit, and the LISTEN/NOTIFY wake-up that every commit sends,
 * each start a read of the events after the last one published, so the commit → client latency includes that read.
 * (Commit on one replica → delivery on another is `npm run bench -- cross-replica`.) Where PostgreSQL's binaries are
 * missing, a line says it was skipped. `FEED_BENCH_STORES` (sqlite,postgresql) picks the stores.
 *
 * Run: `npm run bench -- feed`. `FEED_BENCH_SUBSCRIBERS` (1000), `FEED_BENCH_POOLS` (200), `FEED_BENCH_MODES`
 * (none,shared; flat-out), `FEED_BENCH_NATURAL` (1: add the natural-pace run; 0: skip it). Prints a table
 * and writes bench/results/feed[-sqlite|-pg].json (no suffix with both stores).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FeedClientsResult, FeedExpectation, FeedJob } from './feedClients.js';
import { calibrationMs, post, startBenchApp, windowProfiler } from './benchApp.js';
import { writeResult } from './results.js';
import { startSimChild } from './simChild.js';
import { type BenchStore, forEachStore, ratioOf, STORE_LABEL } from './stores.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const QUERY = 'subscription Feed { events { id type rolloutId object { kind namespace name } payload createdAt } }';
const numberFrom = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
/** The feed's aim: the server's share of a delivery's latency at p99, at 1,000 subscribers. */
const FEED_AIM_P99_MS = 100;

type Mode = 'none' | 'shared';
type Pace = 'flat-out' | 'natural';

interface FeedRun {
  store: BenchStore;
  mode: Mode;
  pace: Pace;
  subscribers: number;
  pools: number;
  events: number;
  rolloutSeconds: number;
  deliveries: number;
  deliveriesPerSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  serverCpuSeconds: number;
  cpuUsPerDelivery: number | null;
  netCpuUsPerDelivery: number | null;
  serverPeakRssMb: number;
  /** Executions of subscription payloads counted by the server (rollplane_subscription_executions_total). */
  executions: number;
  /**
   * Shared fan-out only: commit → handed to the sockets (the server's share of the latency), as the upper bound of the
   * histogram bucket holding p50 / p99 (rollplane_subscription_delivery_lag_seconds).
   */
  serverLagP50Ms: number | null;
  serverLagP99Ms: number | null;
  /**
   * Shared fan-out only, the server-side figure beside the clients' p50/p99: commit → the message written to one
   * subscriber's socket, per delivery (sampled by the server, one live subscriber in 16 per group and delivery:
   * rollplane_subscription_handoff_lag_seconds), interpolated within its histogram buckets as Prometheus'
   * histogram_quantile does. The clients' figure adds the network (loopback) and the clients' own process.
   */
  serverHandoffP50Ms: number | null;
  serverHandoffP99Ms: number | null;
  serverHandoffSamples: number;
  /** The server's event-loop delay p99 during the rollout, ms: time an event waits behind other work before its delivery runs. */
  loopDelayP99Ms: number;
  /** CPU of the subscribers' process (they run on the same machine). */
  clientCpuSeconds: number;
  /** os.loadavg()[0] at the start and the end of the run: these machines are shared, and latency shows it. */
  loadAverage: [number, number];
  incomplete: number;
  /** Client-side `next` messages parsed whole instead of read by position (see feedClients.ts). */
  parsedWhole: number;
  outOfOrder: number;
  duplicates: number;
  errors: number;
  calibrationMs: number;
}

function startClients(job: FeedJob): { child: ChildProcess; ready: Promise<void>; finish(expected: FeedExpectation): Promise<FeedClientsResult> } {
  const script = path.join(HERE, `feedClients${path.extname(fileURLToPath(import.meta.url))}`);
  const child = spawn(process.execPath, [...process.execArgv, script, JSON.stringify(job)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const queue: string[] = [];
  let waiter: ((line: string) => void) | undefined;
  lines.on('line', (line) => {
    if (!waiter) return void queue.push(line);
    waiter(line);
    waiter = undefined;
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`feed clients exited ${code}`))));
  const nextLine = () => Promise.race([queue.length ? Promise.resolve(queue.shift()!) : new Promise<string>((resolve) => (waiter = resolve)), exited]);
  return {
    child,
    ready: nextLine().then((line) => {
      if (line !== 'ready') throw new Error(`feed clients said "${line}"`);
    }),
    async finish(expected) {
      child.stdin!.write(`${JSON.stringify(expected)}\n`);
      return JSON.parse(await nextLine()) as FeedClientsResult;
    },
  };
}

type BenchApp = Awaited<ReturnType<typeof startBenchApp>>;

/**
 * Quantile `q` (ms) of a histogram, interpolated linearly within the bucket that holds it (Prometheus'
 * histogram_quantile); null when empty, Infinity past the last finite bucket.
 */
async function interpolatedQuantile(histogram: BenchApp['metrics']['subscriptionHandoffLag'], q: number): Promise<number | null> {
  const buckets = (await histogram.get()).values
    .filter((v) => v.metricName?.endsWith('_bucket'))
    .map((v) => ({ le: v.labels.le === '+Inf' ? Infinity : Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let below = { le: 0, count: 0 };
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) return Infinity;
      const share = bucket.count === below.count ? 1 : (rank - below.count) / (bucket.count - below.count);
      return Math.round((below.le + (bucket.le - below.le) * share) * 10000) / 10;
    }
    below = bucket;
  }
  return Infinity;
}

async function sampleCount(histogram: BenchApp['metrics']['subscriptionHandoffLag']): Promise<number> {
  return (await histogram.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
}

/** The upper bound (ms) of the histogram bucket that holds quantile `q`; null when empty. */
async function bucketQuantile(app: BenchApp, q: number): Promise<number | null> {
  const values = (await app.metrics.subscriptionDeliveryLag.get()).values.filter((v) => v.metricName?.endsWith('_bucket'));
  const total = values.find((v) => v.labels.le === '+Inf')?.value ?? 0;
  if (total === 0) return null;
  const bucket = values.find((v) => v.value >= q * total);
  return bucket && bucket.labels.le !== '+Inf' ? Number(bucket.labels.le) * 1000 : Infinity;
}

async function runOnce(store: BenchStore, databaseEnv: Record<string, string>, mode: Mode, pace: Pace, subscribers: number, pools: number): Promise<FeedRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-feed-'));
  const calibration = calibrationMs();
  const loadAtStart = os.loadavg()[0]!;
  const sim = await startSimChild({ fleet: `pools=${pools},nodes=3,peers=0`, kubeconfigPath: path.join(dir, 'kubeconfig'), heapMb: 512, pace });
  const app = await startBenchApp(dir, sim.kubeconfigPath, {
    ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
    // One address opens every subscriber: the per-client caps and the query-cost budget are not what is measured.
    ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT: String(subscribers + 10),
    ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000',
    ROLLPLANE_QUERY_COST_BURST: '1000000000',
    ...databaseEnv,
  });
  let clients: ReturnType<typeof startClients> | undefined;
  try {
    for (;;) {
      const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }');
      if (data.agentPools.totalCount === pools) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (mode !== 'none') {
      const busBase = app.bus.subscriberCount();
      clients = startClients({ url: app.url, subscribers, query: QUERY, timeoutMs: 180_000 });
      await clients.ready;
      // Subscribed means registered at the server (positioned, receiving), not just sent.
      const registered = async () =>
        mode === 'shared'
          ? ((await app.metrics.subscriptionsShared.get()).values[0]?.value ?? 0) >= subscribers
          : app.bus.subscriberCount() - busBase >= subscribers;
      while (!(await registered())) await new Promise((r) => setTimeout(r, 50));
    }
    const executionsBefore = (await app.metrics.subscriptionExecutions.get()).values.reduce((sum, v) => sum + v.value, 0);
    let events = 0;
    let idSum = 0;
    let lastEventAt = Date.now();
    const ended = new Promise<string>((resolve) => {
      app.bus.subscribe((event) => {
        events++;
        idSum += event.id;
        lastEventAt = Date.now();
        if (event.type === 'RolloutStateChanged' && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(String(event.payload.to))) resolve(String(event.payload.to));
      });
    });
    let peakRss = 0;
    const sample = () => (peakRss = Math.max(peakRss, process.memoryUsage.rss()));
    const sampler = setInterval(sample, 100);
    await sim.start();
    const profiler = windowProfiler(`feed-${store}-${mode}-${pace}`);
    await profiler.start();
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const cpu = process.cpuUsage();
    const started = Date.now();
    await post(app.url, 'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable: '25%' } },
    });
    const state = await ended;
    const rolloutSeconds = (Date.now() - started) / 1000;
    if (state !== 'SUCCEEDED') throw new Error(`rollout ended ${state}`);
    // Late events (the last agents' observations) still count: wait until the history has been quiet for a second.
    while (Date.now() - lastEventAt < 1000) await new Promise((r) => setTimeout(r, 100));
    const feed = clients ? await clients.finish({ events, idSum }) : undefined;
    const used = process.cpuUsage(cpu);
    loopDelay.disable();
    clearInterval(sampler);
    sample();
    const profile = await profiler.stop();
    if (profile) process.stderr.write(`  CPU profile: ${profile}\n`);
    const executions = (await app.metrics.subscriptionExecutions.get()).values.reduce((sum, v) => sum + v.value, 0) - executionsBefore;
    const cpuSeconds = (used.user + used.system) / 1e6;
    const deliveries = feed?.deliveries ?? 0;
    return {
      store,
      mode,
      pace,
      subscribers: mode === 'none' ? 0 : subscribers,
      pools,
      events,
      rolloutSeconds,
      deliveries,
      deliveriesPerSecond: feed && feed.spanMs > 0 ? Math.round(deliveries / (feed.spanMs / 1000)) : 0,
      p50Ms: feed?.p50Ms ?? null,
      p99Ms: feed?.p99Ms ?? null,
      maxMs: feed?.maxMs ?? null,
      serverCpuSeconds: Math.round(cpuSeconds * 100) / 100,
      cpuUsPerDelivery: deliveries ? Math.round((cpuSeconds * 1e6) / deliveries) : null,
      netCpuUsPerDelivery: null,
      serverPeakRssMb: Math.round(peakRss / 1048576),
      executions,
      serverLagP50Ms: await bucketQuantile(app, 0.5),
      serverLagP99Ms: await bucketQuantile(app, 0.99),
      serverHandoffP50Ms: await interpolatedQuantile(app.metrics.subscriptionHandoffLag, 0.5),
      serverHandoffP99Ms: await interpolatedQuantile(app.metrics.subscriptionHandoffLag, 0.99),
      serverHandoffSamples: await sampleCount(app.metrics.subscriptionHandoffLag),
      loopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e5) / 10,
      clientCpuSeconds: feed?.clientCpuSeconds ?? 0,
      loadAverage: [Math.round(loadAtStart * 10) / 10, Math.round(os.loadavg()[0]! * 10) / 10],
      incomplete: feed?.incomplete ?? 0,
      parsedWhole: feed?.parsedWhole ?? 0,
      outOfOrder: feed?.outOfOrder ?? 0,
      duplicates: feed?.duplicates ?? 0,
      errors: feed?.errors ?? 0,
      calibrationMs: calibration,
    };
  } finally {
    clients?.child.kill();
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The runs of one store; "net CPU/delivery" subtracts that store's own `none` run. */
async function runStore(store: BenchStore, databaseEnv: () => Promise<Record<string, string>>, subscribers: number, pools: number): Promise<FeedRun[]> {
  const modes = (process.env.FEED_BENCH_MODES ?? 'none,shared').split(',').map((m) => m.trim()) as Mode[];
  const specs: { mode: Mode; pace: Pace }[] = modes.map((mode) => ({ mode, pace: 'flat-out' }));
  if (process.env.FEED_BENCH_NATURAL !== '0') specs.push({ mode: 'shared', pace: 'natural' });
  const runs: FeedRun[] = [];
  for (const { mode, pace } of specs) {
    process.stderr.write(`  feed: ${STORE_LABEL[store]}, ${mode}, ${pace}, ${mode === 'none' ? 0 : subscribers} subscribers, ${pools} pools …\n`);
    runs.push(await runOnce(store, await databaseEnv(), mode, pace, subscribers, pools));
  }
  const none = runs.find((r) => r.mode === 'none');
  for (const r of runs) {
    if (none && r.pace === 'flat-out' && r.deliveries > 0)
      r.netCpuUsPerDelivery = Math.round(((r.serverCpuSeconds - none.serverCpuSeconds) * 1e6) / r.deliveries);
  }
  return runs;
}

export async function run(): Promise<FeedRun[]> {
  const subscribers = numberFrom('FEED_BENCH_SUBSCRIBERS', 1000);
  const pools = numberFrom('FEED_BENCH_POOLS', 200);
  const { runs: byStore, skipped } = await forEachStore('FEED_BENCH_STORES', (store, databaseEnv) => runStore(store, databaseEnv, subscribers, pools));
  const runs = byStore.flatMap((r) => r.result);
  if (runs.length === 0) throw new Error('feed: no store was measured');
  console.log(
    [
      'Latency, all from the commit (createdAt, one clock): "client" = received by the subscribers\' process (loopback and',
      'that process included); "server" = written to that subscriber\'s socket, per delivery (server-side sample, 1 in 16,',
      'interpolated in the histogram\'s buckets); "event handed to all" = once per event, when the last socket was written',
      '(bucket upper bound).',
    ].join('\n'),
  );
  console.table(
    runs.map((r) => ({
      store: STORE_LABEL[r.store],
      mode: r.mode,
      pace: r.pace,
      subscribers: r.subscribers,
      events: r.events,
      'rollout (s)': r.rolloutSeconds,
      deliveries: r.deliveries,
      'deliveries/s': r.deliveriesPerSecond,
      'client p50/p99/max ms': r.p50Ms === null ? '' : `${r.p50Ms}/${r.p99Ms}/${r.maxMs}`,
      'server p50/p99 ms': r.serverHandoffP50Ms === null ? '' : `${r.serverHandoffP50Ms}/${r.serverHandoffP99Ms}`,
      'server CPU s': r.serverCpuSeconds,
      'CPU µs/delivery': r.cpuUsPerDelivery ?? '',
      'net CPU µs/delivery': r.netCpuUsPerDelivery ?? '',
      executions: r.executions,
      'peak RSS MB': r.serverPeakRssMb,
      'event handed to all p50/p99 ms (≤)': r.serverLagP50Ms === null ? '' : `${r.serverLagP50Ms}/${r.serverLagP99Ms}`,
      'loop delay p99 ms': r.loopDelayP99Ms,
      'client CPU s': r.clientCpuSeconds,
      'client: parsed whole': r.parsedWhole,
      'load avg': r.loadAverage.join('→'),
      'incomplete/out of order/dup/errors': `${r.incomplete}/${r.outOfOrder}/${r.duplicates}/${r.errors}`,
      'calibration ms': r.calibrationMs,
    })),
  );
  if (skipped) console.log(`PostgreSQL skipped: ${skipped}`);
  // The feed's aim (issue 17, ADR 0021): the server's share, commit → written to the subscriber's socket, p99 ≤ 100 ms.
  const aim = runs
    .filter((r) => r.mode === 'shared')
    .map((r) => ({
      store: r.store,
      pace: r.pace,
      subscribers: r.subscribers,
      serverP99Ms: r.serverHandoffP99Ms,
      met: r.serverHandoffP99Ms !== null && r.serverHandoffP99Ms <= FEED_AIM_P99_MS,
    }));
  for (const a of aim) {
    console.log(
      `feed aim (server p99 ≤ ${FEED_AIM_P99_MS} ms), ${STORE_LABEL[a.store]} ${a.pace}, ${a.subscribers} subscribers: ${a.serverP99Ms} ms, ${a.met ? 'met' : 'NOT met'}`,
    );
  }
  // The same mode and pace on both stores, PostgreSQL ÷ SQLite (above 1: PostgreSQL slower or costlier; deliveries/s: below 1).
  const comparison = runs
    .filter((r) => r.store === 'postgresql')
    .flatMap((pg) => {
      const sqlite = runs.find((r) => r.store === 'sqlite' && r.mode === pg.mode && r.pace === pg.pace);
      if (!sqlite) return [];
      return [
        {
          mode: pg.mode,
          pace: pg.pace,
          'rollout (s)': ratioOf(pg.rolloutSeconds, sqlite.rolloutSeconds),
          'p50 ms': ratioOf(pg.p50Ms, sqlite.p50Ms),
          'p99 ms': ratioOf(pg.p99Ms, sqlite.p99Ms),
          'server p99 ms': ratioOf(pg.serverHandoffP99Ms, sqlite.serverHandoffP99Ms),
          'deliveries/s': ratioOf(pg.deliveriesPerSecond, sqlite.deliveriesPerSecond),
          'server CPU s': ratioOf(pg.serverCpuSeconds, sqlite.serverCpuSeconds),
          'CPU µs/delivery': ratioOf(pg.cpuUsPerDelivery, sqlite.cpuUsPerDelivery),
          'peak RSS MB': ratioOf(pg.serverPeakRssMb, sqlite.serverPeakRssMb),
        },
      ];
    });
  if (comparison.length > 0) {
    console.log('PostgreSQL ÷ SQLite (same mode and pace; above 1 is slower or costlier on PostgreSQL, except deliveries/s):');
    console.table(comparison);
  }
  const stores = byStore.map((r) => r.store);
  const file = writeResult(`feed${stores.length === 2 ? '' : stores[0] === 'postgresql' ? '-pg' : '-sqlite'}`, {
    name: 'feed',
    date: new Date().toISOString(),
    node: process.version,
    query: QUERY,
    stores,
    postgresqlSkipped: skipped ?? null,
    aim,
    postgresqlToSqlite: comparison,
    runs,
  });
  console.log(`wrote ${file}`);
  // A run whose subscribers did not each get every event once, in order, measured nothing worth reporting.
  const broken = runs.filter((r) => r.incomplete + r.outOfOrder + r.duplicates + r.errors > 0);
  if (broken.length > 0) {
    throw new Error(
      `feed: subscribers missed, repeated or reordered events, or got errors in ${broken.map((r) => `${STORE_LABEL[r.store]} ${r.mode} ${r.pace}`).join(', ')}`,
    );
  }
  return runs;
}
