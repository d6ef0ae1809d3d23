/**
 * Node-agent rollout benchmark: the real service (GraphQL, engine, SQLite, gate controller, client-node over HTTP)
 * against the simulator with zero delays, `nodes=50,peers=2`, in one process. One `bumpNodeAgentImage` NODE_BY_NODE;
 * with zero simulated delays whatever time a node takes is rollplane's own overhead. Measured at the simulator:
 * total time to SUCCEEDED, per node the time from deleting its old agent to its new agent Ready (gate included), the
 * hand-off gap from one node's new agent Ready to the next node's old agent deletion, and Kubernetes API writes per node.
 * Prints a table and writes bench/results/node-agent.json. Run: `npm run bench -- node-agent`
 * (`NODE_AGENT_BENCH_NODES=50`, `NODE_AGENT_BENCH_MODE=NODE_BY_NODE,SURGE` to change). Both modes by default.
 */
import { post, startBenchApp } from './benchApp.js';
import { writeResult } from './results.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { zeroDelays } from '../src/sim/behaviour/index.js';
import { startSimulator } from '../src/sim/index.js';
import type { ApiRequestInfo, KubeObject } from '../src/sim/types.js';

const DS_NS = 'confidential-containers-system';
const DS_NAME = 'cloud-api-adaptor-daemonset';
const NEW = 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0';

export interface NodeAgentBenchResult {
  name: 'node-agent';
  date: string;
  node: string;
  nodes: number;
  mode: string;
  totalSeconds: number;
  perNodeMs: { mean: number; p50: number; p95: number; max: number };
  handoffGapMs: { mean: number; p50: number; p95: number; max: number };
  writes: Record<string, number>;
  writesPerNode: number;
  requestsPerNode: number;
}

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    mean: round(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)),
    p50: round(at(0.5)),
    p95: round(at(0.95)),
    max: round(sorted[sorted.length - 1] ?? 0),
  };
}

const isAgent = (pod: KubeObject) => pod.metadata.namespace === DS_NS;
const isReady = (pod: KubeObject) =>
  !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

export async function run(): Promise<NodeAgentBenchResult[]> {
  const nodes = Number(process.env.NODE_AGENT_BENCH_NODES ?? '50');
  const modes = (process.env.NODE_AGENT_BENCH_MODE ?? 'NODE_BY_NODE,SURGE').split(',');
  const results: NodeAgentBenchResult[] = [];
  for (const mode of modes) results.push(await runOnce(nodes, mode));
  writeResult('node-agent', results);
  return results;
}

async function runOnce(nodes: number, mode: string): Promise<NodeAgentBenchResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-nodeagent-'));
  let counting = false;
  const writes: Record<string, number> = {};
  let requests = 0;
  const sim = await startSimulator({
    // NODE_AGENT_BENCH_UPSTREAM=caa: the chart-shaped cloud-api-adaptor DaemonSet (RollingUpdate, no readiness gate).
    fleet: `nodes=${nodes},peers=2${process.env.NODE_AGENT_BENCH_UPSTREAM ? `,upstream=${process.env.NODE_AGENT_BENCH_UPSTREAM}` : ''}`,
    delays: zeroDelays,
    kubeconfigPath: path.join(dir, 'kubeconfig'),
    hooks: {
      beforeRequest: (info: ApiRequestInfo) => {
        if (!counting) return;
        if (info.verb !== 'watch') requests++;
        if (info.verb === 'get' || info.verb === 'list' || info.verb === 'watch') return;
        const key = `${info.verb} ${info.resource.plural}${info.subresource ? `/${info.subresource}` : ''}`;
        writes[key] = (writes[key] ?? 0) + 1;
      },
    },
  });
  const app = await startBenchApp(dir, sim.kubeconfigPath);
  try {
    for (;;) {
      const data = await post(app.url, 'query ($ns: String!, $n: String!) { nodeAgentSet(namespace: $ns, name: $n) { nodes { ready } } }', {
        ns: DS_NS,
        n: DS_NAME,
      });
      const list = data.nodeAgentSet?.nodes ?? [];
      if (list.length === nodes && list.every((n: { ready: boolean }) => n.ready)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Per node: when its old agent was deleted (or handed over), when its new agent turned Ready.
    const startedAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    const unsubscribe = sim.store.subscribe((event) => {
      if (event.resource.plural !== 'pods' || event.resource.group !== '' || !isAgent(event.object)) return;
      const pod = event.object;
      const node = pod.spec?.nodeName as string | undefined;
      if (!node) return;
      const image = pod.spec?.containers?.[0]?.image;
      if (event.type === 'ADDED' && image === NEW && !startedAt.has(node)) startedAt.set(node, performance.now());
      if (event.type !== 'DELETED' && image === NEW && isReady(pod) && !readyAt.has(node)) readyAt.set(node, performance.now());
    });
    counting = true;
    const begin = performance.now();
    const bump = await post(app.url, 'mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id } } }', {
      input: { namespace: DS_NS, name: DS_NAME, image: NEW, mode },
    });
    const id = bump.bumpNodeAgentImage.rollout.id as string;
    for (;;) {
      const data = await post(app.url, 'query ($id: ID!) { rollout(id: $id) { state message } }', { id });
      if (['SUCCEEDED', 'FAILED', 'ABORTED'].includes(data.rollout.state)) {
        if (data.rollout.state !== 'SUCCEEDED') throw new Error(`rollout ended ${data.rollout.state}: ${data.rollout.message}`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const totalSeconds = (performance.now() - begin) / 1000;
    counting = false;
    unsubscribe();

    const order = [...startedAt.entries()].sort((a, b) => a[1] - b[1]).map(([node]) => node);
    const perNode = order.map((n) => (readyAt.get(n) ?? NaN) - startedAt.get(n)!);
    const gaps = order.slice(1).map((n, i) => startedAt.get(n)! - (readyAt.get(order[i]!) ?? NaN));
    const totalWrites = Object.values(writes).reduce((a, b) => a + b, 0);
    const result: NodeAgentBenchResult = {
      name: 'node-agent',
      date: new Date().toISOString(),
      node: process.version,
      nodes,
      mode,
      totalSeconds: Math.round(totalSeconds * 100) / 100,
      perNodeMs: stats(perNode),
      handoffGapMs: stats(gaps),
      writes,
      writesPerNode: Math.round((totalWrites / nodes) * 100) / 100,
      requestsPerNode: Math.round((requests / nodes) * 100) / 100,
    };
    const ms = (s: { mean: number; p50: number; p95: number; max: number }) => `mean ${s.mean} · p50 ${s.p50} · p95 ${s.p95} · max ${s.max}`;
    console.table([
      { metric: `total, ${nodes} nodes ${mode} (zero sim delays)`, value: `${result.totalSeconds} s` },
      { metric: 'overhead per node (total ÷ nodes)', value: `${Math.round((totalSeconds * 1000) / nodes)} ms` },
      { metric: 'old agent out → new agent Ready (gate incl.)', value: `${ms(result.perNodeMs)} ms` },
      { metric: 'hand-off: node Ready → next node started', value: `${ms(result.handoffGapMs)} ms` },
      { metric: 'API writes per node', value: String(result.writesPerNode) },
      { metric: 'API requests per node (no watches)', value: String(result.requestsPerNode) },
    ]);
    console.table(Object.entries(writes).map(([write, count]) => ({ write, count })));
    return result;
  } finally {
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// A path, not a URL: the URL percent-encodes a space (or any other special character) in the checkout's path.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
