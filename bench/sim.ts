/**
 * Simulator benchmark: simple requests per second over loopback (GET one pod, several keep-alive clients), writes
 * per second (merge patch of status, server-side apply), watch
 * events delivered per second to 10 watchers, and RSS of a process holding 10,000 pods. Clients run in a child
 * process so they do not share the server's event loop or CPU accounting; the RSS figure comes from a fresh child
 * process. Besides wall-clock rates, request rows report requests per CPU-second of the server process, which stays
 * meaningful when other work loads the machine (the load average is recorded too).
 * Prints a table and writes bench/results/sim.json. Run: `npx tsx bench/sim.ts` or `npm run bench -- sim`.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { availableParallelism, loadavg } from 'node:os';
import { zeroDelays } from '../src/sim/behaviour/index.js';
import { startSimulator } from '../src/sim/index.js';
import { Resources } from '../src/sim/store/resources.js';
import type { KubeObject } from '../src/sim/types.js';
import { writeResult } from './results.js';

export interface BenchRow {
  metric: string;
  value: number;
  unit: string;
  aim: string;
  ok: boolean;
  note: string;
}

export interface BenchResult {
  name: 'sim';
  date: string;
  node: string;
  /** 1-minute load average before and after the run: figures taken on a busy machine read low. */
  loadAverage: { before: number; after: number };
  cpus: number;
  rows: BenchRow[];
}

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Client side, in a child process: plain JS on node:http. */
const CLIENT = `
const workerData = JSON.parse(process.env.SIM_BENCH_CLIENT);
const parentPort = { postMessage: (message) => process.send(message) };
const http = require('node:http');
const { mode, url, path, connections, seconds, expected, method, contentType, body, targets } = workerData;
if (mode === 'requests') {
  // Round-robin over {i} in 0..targets-1; {n} in path/body becomes a running counter so every write changes something.
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let done = 0, errors = 0, running = true, n = 0;
  const started = process.hrtime.bigint();
  setTimeout(() => { running = false; }, seconds * 1000);
  let open = connections;
  const loop = () => {
    if (!running) { if (--open === 0) finish(); return; }
    n++;
    const fill = (t) => t.replaceAll('{i}', String(n % (targets || 1))).replaceAll('{n}', String(n));
    const payload = body ? fill(body) : undefined;
    const headers = payload ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) } : {};
    const req = http.request(url + fill(path), { agent, method: method || 'GET', headers }, (res) => {
      res.resume();
      res.on('end', () => { if (res.statusCode < 300) done++; else errors++; loop(); });
    });
    req.on('error', () => { errors++; loop(); });
    req.end(payload);
  };
  const finish = () => {
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    agent.destroy();
    parentPort.postMessage({ done, errors, elapsed });
  };
  for (let i = 0; i < connections; i++) loop();
} else {
  let ready = 0, total = 0, firstAt = 0n;
  const counts = new Array(connections).fill(0);
  const reqs = [];
  for (let i = 0; i < connections; i++) {
    const req = http.get(url + path, (res) => {
      ready++;
      if (ready === connections) parentPort.postMessage({ ready: true });
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        let n = 0;
        for (let j = chunk.indexOf('\\n'); j !== -1; j = chunk.indexOf('\\n', j + 1)) n++;
        if (n && !firstAt) firstAt = process.hrtime.bigint();
        counts[i] += n; total += n;
        if (total >= expected * connections) {
          parentPort.postMessage({ total, at: Date.now(), counts });
          for (const r of reqs) r.destroy();
        }
      });
    });
    req.on('error', () => {});
    reqs.push(req);
  }
}
`;

function worker<T>(data: Record<string, unknown>, onMessage?: (msg: any) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, SIM_BENCH_CLIENT: JSON.stringify(data) },
    });
    child.on('message', (msg: any) => {
      if (msg.ready) return onMessage?.(msg);
      resolve(msg as T);
      child.kill();
    });
    child.on('error', reject);
  });
}

/** Runs `fn` and returns its result with the CPU seconds this (server) process spent meanwhile. */
async function withCpu<T>(fn: () => Promise<T>): Promise<{ result: T; cpuSeconds: number }> {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return { result, cpuSeconds: (used.user + used.system) / 1e6 };
}

function pod(name: string, namespace: string, node?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { app: 'bench', 'pod-template-hash': '5d8f7c9b4' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'bench-5d8f7c9b4', uid: '00000000-0000-0000-0000-000000000001', controller: true }],
    },
    spec: {
      ...(node ? { nodeName: node } : {}),
      containers: [
        {
          name: 'agent',
          image: 'rancher/harvester-vm-dhcp-agent:v0.3.0',
          args: ['--ippool', `${namespace}/${name}`, '--nic', 'eth1'],
          env: [{ name: 'POD_NAME', value: name }],
          resources: { requests: { cpu: '10m', memory: '32Mi' } },
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
    },
  };
}

async function requestsPerSecond(): Promise<BenchRow> {
  const sim = await startSimulator({ behaviour: false });
  try {
    sim.store.create(Resources.pods, pod('target', 'default', 'node-1'));
    const connections = 8;
    const seconds = 3;
    const { result: r, cpuSeconds } = await withCpu(() =>
      worker<{ done: number; errors: number; elapsed: number }>({
        mode: 'requests',
        url: sim.url,
        path: '/api/v1/namespaces/default/pods/target',
        connections,
        seconds,
      }),
    );
    const value = Math.round(r.done / r.elapsed);
    const perCpu = Math.round(r.done / cpuSeconds);
    return {
      metric: 'GET one pod',
      value,
      unit: 'req/s',
      aim: '≥ 3000',
      ok: value >= 3000,
      note: `${connections} keep-alive clients, ${seconds}s, ${r.errors} errors; ${perCpu} req per server CPU-second`,
    };
  } finally {
    await sim.stop();
  }
}

/**
 * The same IPPool kind served without a schema: a twin CRD in another group whose schema is
 * `x-kubernetes-preserve-unknown-fields` (nothing to prune, default or validate). Writes to it are the "before" of
 * the schema-cost comparison; writes to the real IPPool (the upstream schema) are the "after", in the same run.
 */
const SCHEMALESS_GROUP = 'bench.rollplane.io';
const SCHEMALESS_IPPOOL_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `ippools.${SCHEMALESS_GROUP}` },
  spec: {
    group: SCHEMALESS_GROUP,
    scope: 'Namespaced',
    names: { plural: 'ippools', singular: 'ippool', kind: 'IPPool', listKind: 'IPPoolList' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

interface WriteCase {
  metric: string;
  path: string;
  contentType: string;
  body: string;
}

function writeCases(group: string): WriteCase[] {
  const base = `/apis/${group}/v1alpha1/namespaces/default/ippools/pool-{i}`;
  return [
    { metric: 'PATCH merge IPPool status', path: `${base}/status`, contentType: 'application/merge-patch+json', body: '{"status":{"ipv4":{"used":{n}}}}' },
    {
      metric: 'PATCH server-side apply IPPool',
      path: `${base}?fieldManager=bench&force=true`,
      contentType: 'application/apply-patch+yaml',
      body: `{"apiVersion":"${group}/v1alpha1","kind":"IPPool","metadata":{"name":"pool-{i}","namespace":"default","annotations":{"bench/n":"{n}"}},"spec":{"paused":false}}`,
    },
  ];
}

interface Round {
  rate: number;
  perCpu: number;
  errors: number;
}

async function writeRound(url: string, c: WriteCase, targets: number, connections: number, seconds: number): Promise<Round> {
  const { result: r, cpuSeconds } = await withCpu(() =>
    worker<{ done: number; errors: number; elapsed: number }>({
      mode: 'requests',
      url,
      path: c.path,
      method: 'PATCH',
      contentType: c.contentType,
      body: c.body,
      targets,
      connections,
      seconds,
    }),
  );
  return { rate: r.done / r.elapsed, perCpu: r.done / cpuSeconds, errors: r.errors };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Writes over HTTP against 1,000 IPPools: merge-patch of status, and server-side apply of an annotation. Each case
 * runs in alternating rounds against the schemaless twin and the real IPPool, so that load on a shared machine falls
 * on both sides alike; the schema's cost is the ratio of the medians (per server CPU-second, the steadier figure).
 */
async function writesPerSecond(): Promise<BenchRow[]> {
  const sim = await startSimulator({ behaviour: false });
  const rows: BenchRow[] = [];
  try {
    sim.store.create(Resources.customresourcedefinitions, SCHEMALESS_IPPOOL_CRD);
    const schemaless = sim.store.resourceType(SCHEMALESS_GROUP, 'ippools');
    if (!schemaless) throw new Error('the schemaless IPPool twin is not served');
    const targets = 1000;
    for (const [type, apiVersion] of [
      [Resources.ippools, 'network.harvesterhci.io/v1alpha1'],
      [schemaless, `${SCHEMALESS_GROUP}/v1alpha1`],
    ] as const) {
      for (let i = 0; i < targets; i++) {
        sim.store.create(type, {
          apiVersion,
          kind: 'IPPool',
          metadata: { name: `pool-${i}`, namespace: 'default', labels: { app: 'bench' } },
          spec: { networkName: 'default/net', ipv4Config: { cidr: '10.0.0.0/24', serverIP: '10.0.0.2', pool: { start: '10.0.0.10', end: '10.0.0.250' } } },
          status: { ipv4: { used: 0, available: 240 }, conditions: [{ type: 'Registered', status: 'True' }] },
        });
      }
    }
    const withSchema = writeCases('network.harvesterhci.io');
    const without = writeCases(SCHEMALESS_GROUP);
    const connections = 8;
    const seconds = 2;
    const rounds = 5;
    for (let k = 0; k < withSchema.length; k++) {
      const before: Round[] = [];
      const after: Round[] = [];
      for (let round = 0; round < rounds; round++) {
        before.push(await writeRound(sim.url, without[k]!, targets, connections, seconds));
        after.push(await writeRound(sim.url, withSchema[k]!, targets, connections, seconds));
      }
      const errors = [...before, ...after].reduce((n, r) => n + r.errors, 0);
      const rate = median(after.map((r) => r.rate));
      const perCpuRatio = median(after.map((r) => r.perCpu)) / median(before.map((r) => r.perCpu));
      const wallRatio = rate / median(before.map((r) => r.rate));
      const cost = Math.round((1 - perCpuRatio) * 1000) / 10;
      rows.push({
        metric: withSchema[k]!.metric,
        value: Math.round(rate),
        unit: 'req/s',
        aim: 'schema cost ≤ 10%',
        ok: errors === 0 && cost <= 10,
        note:
          `${connections} keep-alive clients over ${targets} objects, ${rounds}×${seconds}s alternating with a schemaless twin CRD, ${errors} errors; ` +
          `schema cost ${cost}% per server CPU-second (${Math.round(median(after.map((r) => r.perCpu)))} vs ${Math.round(median(before.map((r) => r.perCpu)))} req/CPU-s), ` +
          `wall-clock ratio ${wallRatio.toFixed(2)}`,
      });
    }
  } finally {
    await sim.stop();
  }
  return rows;
}

async function watchEventsPerSecond(): Promise<BenchRow> {
  const sim = await startSimulator({ behaviour: false });
  try {
    const watchers = 10;
    const events = 20_000;
    let ready!: () => void;
    const readyP = new Promise<void>((r) => (ready = r));
    const resultP = worker<{ total: number; at: number }>(
      {
        mode: 'watch',
        url: sim.url,
        path: `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${sim.store.currentRevision()}`,
        connections: watchers,
        expected: events,
      },
      () => ready(),
    );
    await readyP;
    const start = Date.now();
    for (let i = 0; i < events; i++) {
      sim.store.create(Resources.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `cm-${i}`, namespace: 'default', labels: { i: String(i) } },
        data: { value: String(i) },
      });
      if (i % 500 === 499) await new Promise((r) => setImmediate(r));
    }
    const r = await resultP;
    const elapsed = (r.at - start) / 1000;
    const value = Math.round(r.total / elapsed);
    return {
      metric: 'watch events delivered',
      value,
      unit: 'events/s',
      aim: '≥ 20000',
      ok: value >= 20_000,
      note: `${events} writes × ${watchers} watchers in ${elapsed.toFixed(2)}s`,
    };
  } finally {
    await sim.stop();
  }
}

/** In a fresh process: 50 nodes, 10,000 pods through the simulated scheduler and kubelets, then RSS after GC. */
async function rssChild(): Promise<void> {
  const sim = await startSimulator({ delays: zeroDelays });
  for (let n = 0; n < 50; n++) {
    sim.store.create(Resources.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: `node-${n}`, labels: { 'kubernetes.io/hostname': `node-${n}` } },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
  }
  for (let ns = 0; ns < 10; ns++) sim.store.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `ns-${ns}` } });
  for (let i = 0; i < 10_000; i++) {
    sim.store.create(Resources.pods, pod(`pod-${i}`, `ns-${i % 10}`));
    if (i % 500 === 499) await new Promise((r) => setImmediate(r));
  }
  await sim.behaviour?.idle();
  await new Promise((r) => setTimeout(r, 200));
  const running = sim.store.list(Resources.pods).filter((p) => p.status?.phase === 'Running').length;
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  process.stdout.write(
    `${JSON.stringify({ rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, pods: sim.store.count(Resources.pods), running })}\n`,
  );
  await sim.stop();
}

/**
 * Runs rssChild in a fresh process, twice: as compiled JavaScript (bundled with esbuild, packages external — what
 * `npm start` runs) and under tsx (the dev loader adds ~90 MB of its own).
 */
async function childRss(compiled: boolean): Promise<{ rss: number; heapUsed: number; heapTotal: number; pods: number; running: number }> {
  let args: string[];
  if (compiled) {
    const { build } = await import('esbuild');
    const outfile = path.join(HERE, '..', 'node_modules', '.cache', 'rollplane-bench', 'sim-rss.mjs');
    await build({
      entryPoints: [fileURLToPath(import.meta.url)],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'error',
    });
    args = ['--expose-gc', outfile, '--rss-child'];
  } else {
    args = ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--rss-child'];
  }
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`rss child exited with ${code}`))));
  });
  return JSON.parse(out.trim().split('\n').pop()!);
}

async function rssWith10kPods(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const compiled of [true, false]) {
    const r = await childRss(compiled);
    const mb = Math.round(r.rss / 1024 / 1024);
    rows.push({
      metric: `RSS with 10,000 pods (${compiled ? 'compiled JS' : 'under tsx'})`,
      value: mb,
      unit: 'MB',
      aim: compiled ? '≤ 300' : '(info)',
      ok: compiled ? mb <= 300 : true,
      note: `${r.pods} pods (${r.running} Running) on 50 nodes, heap ${Math.round(r.heapUsed / 1048576)}/${Math.round(r.heapTotal / 1048576)} MB used/total, whole process incl. client-node, after GC`,
    });
  }
  return rows;
}

export async function run(): Promise<BenchResult> {
  const before = loadavg()[0]!;
  const rows = [await requestsPerSecond(), ...(await writesPerSecond()), await watchEventsPerSecond(), ...(await rssWith10kPods())];
  const loadAverage = { before: Math.round(before * 100) / 100, after: Math.round(loadavg()[0]! * 100) / 100 };
  const result: BenchResult = { name: 'sim', date: new Date().toISOString(), node: process.version, loadAverage, cpus: availableParallelism(), rows };
  console.log(`load average ${loadAverage.before} → ${loadAverage.after} on ${result.cpus} CPUs`);
  console.table(rows.map((r) => ({ metric: r.metric, value: r.value, unit: r.unit, aim: r.aim, ok: r.ok ? 'yes' : 'NO', note: r.note })));
  writeResult('sim', result);
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  if (process.argv.includes('--rss-child')) await rssChild();
  else await run();
}
