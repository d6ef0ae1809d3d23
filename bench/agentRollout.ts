/**
 * Agent-pool rollout benchmark: the real service (GraphQL, engine, SQLite, controllers, client-node over HTTP) and the
 * simulator with zero delays in one process. One `bumpAgentImage` with maxUnavailable 100% over every pool; measured:
 * time until every agent runs the new image and is Ready (and until the rollout is SUCCEEDED), peak RSS of service +
 * simulator, and Kubernetes API writes per recreated agent counted at the simulator. A third run uses the default API
 * budget (50 QPS, burst 100) to compare the rollout time with requests ÷ QPS.
 * Prints a table and writes bench/results/agent-rollout.json. Run: `npm run bench -- agent-rollout`
 * (`AGENT_BENCH_SIZES=1000,10000` and `AGENT_BENCH_BUDGET_POOLS=200` to change the sizes).
 */
import { post, startBenchApp } from './benchApp.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { zeroDelays } from '../src/sim/behaviour/index.js';
import { startSimulator } from '../src/sim/index.js';
import type { ApiRequestInfo, KubeObject } from '../src/sim/types.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

interface RunResult {
  pools: number;
  budget: string;
  secondsToAllNewImage: number;
  secondsToSucceeded: number;
  peakRssMb: number;
  writes: Record<string, number>;
  writesPerAgent: number;
  requests: number;
  requestsPerAgent: number;
  /** requests ÷ QPS, for the budgeted run. */
  budgetFloorSeconds: number | null;
}


async function runOnce(pools: number, budget: { qps: number; burst: number } | undefined): Promise<RunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bench-agent-'));
  let counting = false;
  const writes: Record<string, number> = {};
  let requests = 0;
  const sim = await startSimulator({
    fleet: `pools=${pools},nodes=${Math.max(3, Math.ceil(pools / 100))},peers=0`,
    delays: zeroDelays,
    kubeconfigPath: path.join(dir, 'kubeconfig'),
    hooks: {
      beforeRequest: (info: ApiRequestInfo) => {
        if (!counting) return;
        if (info.verb !== 'watch') requests++;
        if (info.verb === 'get' || info.verb === 'list' || info.verb === 'watch') return;
        const key = `${info.verb} ${info.resource.plural}`;
        writes[key] = (writes[key] ?? 0) + 1;
      },
    },
  });
  const app = await startBenchApp(dir, sim.kubeconfigPath, {
    ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
    ...(budget ? { ROLLPLANE_KUBE_QPS: String(budget.qps), ROLLPLANE_KUBE_BURST: String(budget.burst) } : {}),
  });
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  try {
    // Wait until the service lists every pool (caches synced).
    for (;;) {
      const data = await post(app.url, '{ agentPools(first: 1) { totalCount } }', {});
      if (data.agentPools.totalCount === pools) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const podType = sim.store.resourceType('', 'pods')!;
    const isNew = (pod: KubeObject) =>
      pod.spec?.containers?.[0]?.image === NEW && !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
    const onNew = new Set<string>();
    let allNewAt = 0;
    const started = performance.now();
    const unsubscribe = sim.store.subscribe((event) => {
      if (event.resource.plural !== 'pods' || event.resource.group !== '') return;
      const name = event.object.metadata.name;
      if (event.type !== 'DELETED' && isNew(event.object)) onNew.add(name);
      else onNew.delete(name);
      if (!allNewAt && onNew.size === pools) allNewAt = performance.now();
    });
    void podType;
    counting = true;
    const bump = await post(
      app.url,
      'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }',
      { input: { image: NEW, strategy: { maxUnavailable: '100%' } } },
    );
    const id = bump.bumpAgentImage.rollout.id as string;
    let succeededAt = 0;
    const progress = setInterval(() => {
      const total = Object.values(writes).reduce((a, b) => a + b, 0);
      const queues = app.domain.workQueues().filter((q) => q.depth + q.inFlight.length > 0).map((q) => `${q.name} ${q.depth}+${q.inFlight.length}`);
      process.stderr.write(`  ${pools} pools: ${Math.round((performance.now() - started) / 1000)} s, ${onNew.size} on the new image, ${total} writes (${JSON.stringify(writes)}), ${requests} requests; RSS ${Math.round(process.memoryUsage().rss / 1048576)} MB; queues ${queues.join(', ')}\n`);
    }, 5000);
    for (;;) {
      const data = await post(app.url, 'query R($id: ID!) { rollout(id: $id) { state } }', { id });
      if (['SUCCEEDED', 'FAILED', 'ABORTED'].includes(data.rollout.state)) {
        if (data.rollout.state !== 'SUCCEEDED') throw new Error(`rollout ended ${data.rollout.state}`);
        succeededAt = performance.now();
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    clearInterval(progress);
    counting = false;
    unsubscribe();
    const totalWrites = Object.values(writes).reduce((a, b) => a + b, 0);
    return {
      pools,
      budget: budget ? `${budget.qps} QPS, burst ${budget.burst}` : 'unthrottled',
      secondsToAllNewImage: Math.round((allNewAt - started) / 10) / 100,
      secondsToSucceeded: Math.round((succeededAt - started) / 10) / 100,
      peakRssMb: Math.round(peakRss / 1024 / 1024),
      writes,
      writesPerAgent: Math.round((totalWrites / pools) * 100) / 100,
      requests,
      requestsPerAgent: Math.round((requests / pools) * 100) / 100,
      budgetFloorSeconds: budget ? Math.round((Math.max(0, requests - budget.burst) / budget.qps) * 100) / 100 : null,
    };
  } finally {
    clearInterval(sampler);
    await app.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<RunResult[]> {
  const sizes = (process.env.AGENT_BENCH_SIZES ?? '1000,10000').split(',').map(Number).filter((n) => n > 0);
  const budgetPools = Number(process.env.AGENT_BENCH_BUDGET_POOLS ?? '200');
  const results: RunResult[] = [];
  for (const pools of sizes) results.push(await runOnce(pools, undefined));
  if (budgetPools > 0) results.push(await runOnce(budgetPools, { qps: 50, burst: 100 }));

  const rows = results.map((r) => ({
    pools: r.pools,
    budget: r.budget,
    'all new image (s)': r.secondsToAllNewImage,
    'rollout SUCCEEDED (s)': r.secondsToSucceeded,
    'peak RSS (MB)': r.peakRssMb,
    'writes/agent': r.writesPerAgent,
    'requests/agent': r.requestsPerAgent,
    'requests ÷ QPS (s)': r.budgetFloorSeconds ?? '',
  }));
  console.table(rows);
  for (const r of results) console.log(`${r.pools} pools (${r.budget}) writes:`, r.writes);
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(
    path.join(HERE, 'results', 'agent-rollout.json'),
    `${JSON.stringify({ name: 'agent-rollout', date: new Date().toISOString(), node: process.version, results }, null, 2)}\n`,
  );
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
