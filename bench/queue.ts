/**
 * Work queue throughput: keys/s through a Controller with a no-op reconciler (1, 4 and 16 workers), the bare
 * WorkQueue add/get/done cycle, a dedupe-heavy load (adds/s), the delay heap, and a plain array FIFO as the baseline,
 * all in the same run. "keys" is adds for every case. Prints a table and
 * writes bench/results/queue.json. Run: `npx tsx bench/queue.ts` or `npm run bench -- queue`.
 */
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { writeResult } from './results.js';
import { Controller } from '../src/controller/Controller.js';
import { WorkQueue } from '../src/controller/WorkQueue.js';

interface Row {
  case: string;
  keys: number;
  seconds: number;
  keysPerSecond: number;
  nsPerKey: number;
  /** This case's time per key divided by the baseline's. */
  ratioToBaseline: number;
}

const KEYS = 200_000;

async function timeIt(fn: () => Promise<void> | void): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Baseline: an array FIFO with an async no-op per item — the least any async queue loop can cost. */
async function baseline(keys: string[]): Promise<void> {
  const fifo: string[] = [];
  for (const k of keys) fifo.push(k);
  let head = 0;
  const noop = async (_k: string): Promise<void> => {};
  while (head < fifo.length) await noop(fifo[head++]!);
}

async function bareQueue(keys: string[], registry?: Registry): Promise<void> {
  const q = new WorkQueue({ name: 'bench-bare', registry });
  for (const k of keys) q.add(k);
  const noop = async (_k: string): Promise<void> => {};
  for (let k = q.tryGet(); k !== undefined; k = q.tryGet()) {
    await noop(k);
    q.done(k);
  }
  q.shutDown();
}

async function throughController(keys: string[], workers: number, registry?: Registry): Promise<void> {
  let remaining = keys.length;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const c = new Controller({
    name: `bench-${workers}${registry ? '-m' : ''}`,
    workers,
    registry,
    reconciler: {
      async reconcile() {
        if (--remaining === 0) finish();
      },
    },
  });
  c.start();
  for (const k of keys) c.enqueue(k);
  await finished;
  await c.stop();
}

/** 10 adds per key while keys are queued or in flight: what dedupe costs and saves (reconciles ≪ adds). */
async function dedupeHeavy(keys: string[]): Promise<void> {
  const distinct = keys.slice(0, keys.length / 10);
  let reconciles = 0;
  const c = new Controller({
    name: 'bench-dedupe',
    workers: 4,
    reconciler: {
      async reconcile() {
        reconciles++;
      },
    },
  });
  c.start();
  for (let round = 0; round < 10; round++) {
    for (const k of distinct) c.enqueue(k);
    if (round % 2 === 1) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  while ((c.queue?.len() ?? 0) > 0 || (c.queue?.inFlight().length ?? 0) > 0) await new Promise<void>((resolve) => setImmediate(resolve));
  await c.stop();
  if (reconciles < distinct.length) throw new Error(`lost keys: ${reconciles} < ${distinct.length}`);
}

/** addAfter with delays spread over 1-20 ms (real clock), consumed as they fire: the delay heap's cost per key. */
async function delayed(keys: string[]): Promise<void> {
  const q = new WorkQueue({ name: 'bench-delayed' });
  // The queue's timers are unref'd (they never keep a process alive on their own); this one does, meanwhile.
  const keepAlive = setInterval(() => {}, 1000);
  for (const [i, k] of keys.entries()) q.addAfter(k, 1 + ((i * 7919) % 20));
  for (let n = 0; n < keys.length; n++) {
    const k = q.tryGet() ?? (await q.get());
    if (k === undefined) throw new Error('queue shut down');
    q.done(k);
  }
  clearInterval(keepAlive);
  q.shutDown();
}

export async function run(): Promise<Row[]> {
  const keys = Array.from({ length: KEYS }, (_, i) => `ns-${i % 100}/obj-${i}`);
  // Warm up the JIT on every path before measuring.
  await baseline(keys.slice(0, 20_000));
  await bareQueue(keys.slice(0, 20_000));
  await throughController(keys.slice(0, 20_000), 4);

  const cases: Array<[string, () => Promise<void>]> = [
    ['baseline: array FIFO + async no-op', () => baseline(keys)],
    ['WorkQueue add/get/done (no metrics)', () => bareQueue(keys)],
    ['WorkQueue add/get/done (metrics)', () => bareQueue(keys, new Registry())],
    ['Controller, 1 worker (no metrics)', () => throughController(keys, 1)],
    ['Controller, 4 workers (no metrics)', () => throughController(keys, 4)],
    ['Controller, 16 workers (no metrics)', () => throughController(keys, 16)],
    ['Controller, 4 workers (metrics)', () => throughController(keys, 4, new Registry())],
    ['Controller, 4 workers, 10 adds per key (dedupe)', () => dedupeHeavy(keys)],
    ['WorkQueue addAfter 1-20 ms (heap) + get/done', () => delayed(keys)],
  ];
  const rows: Row[] = [];
  let baseNs = 0;
  for (const [name, fn] of cases) {
    // best of three: the machine is shared
    let best = Infinity;
    for (let i = 0; i < 3; i++) best = Math.min(best, await timeIt(fn));
    const nsPerKey = (best * 1e9) / KEYS;
    if (rows.length === 0) baseNs = nsPerKey;
    rows.push({
      case: name,
      keys: KEYS,
      seconds: Number(best.toFixed(4)),
      keysPerSecond: Math.round(KEYS / best),
      nsPerKey: Math.round(nsPerKey),
      ratioToBaseline: Number((nsPerKey / baseNs).toFixed(2)),
    });
  }
  console.table(rows);
  // Shared machines skew absolute numbers; the ratios to the in-run baseline are the comparable part.
  const load = loadavg().map((l) => Number(l.toFixed(2)));
  console.log(`load average ${load.join(' ')} on ${cpus().length} CPUs`);
  const ctrl = rows.find((r) => r.case.startsWith('Controller, 4 workers (metrics)'))!;
  const base = rows[0]!;
  console.log(`per-reconcile overhead of the controller (4 workers, metrics) over the baseline loop: ${ctrl.nsPerKey - base.nsPerKey} ns`);
  writeResult('queue', { node: process.version, date: new Date().toISOString(), cpus: cpus().length, loadAverage: load, keys: KEYS, rows });
  return rows;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  await run();
}
