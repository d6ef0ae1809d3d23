/**
 * Simulated-cluster benchmark: how much CPU the in-process behaviour (scheduler, kubelets, workload controllers) and
 * the store spend at fleet scale, without HTTP. Steps, each timed in wall-clock and in CPU time of this process:
 * create the fleet `pools=1000,clusters=100,nodes=50` and let it converge; add 85 Deployments × 100 replicas (about
 * 10,000 pods in all) until available; roll all of them; delete and recreate the 1,000 agent pods (what an agent-pool
 * rollout does). Reports store events per CPU-second and RSS. The aim: the simulator is never what limits a rollout
 * benchmark, i.e. its work per pod is far below what one HTTP request costs.
 * Prints a table and writes bench/results/sim-behaviour.json. Run: `npx tsx bench/simBehaviour.ts` or
 * `npm run bench -- sim-behaviour`.
 */
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBehaviour, zeroDelays } from '../src/sim/behaviour/index.js';
import { agentPod, AGENT_NAMESPACE, applyFleet, nodeIp } from '../src/sim/fleet.js';
import { MemoryStore } from '../src/sim/store/MemoryStore.js';
import { Resources } from '../src/sim/store/resources.js';
import type { KubeObject } from '../src/sim/types.js';
import { writeResult } from './results.js';

interface Row {
  step: string;
  wallMs: number;
  cpuMs: number;
  events: number;
  eventsPerCpuSecond: number;
}

const ready = (p: KubeObject) => p.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') === true;

export async function run(): Promise<{ rows: Row[]; rssMb: number; pods: number }> {
  const loadBefore = loadavg()[0]!;
  const store = new MemoryStore({ historySize: 10_000 });
  const behaviour = startBehaviour(store, { delays: zeroDelays });
  let events = 0;
  store.subscribe(() => events++);
  const settle = async (done: () => boolean) => {
    for (;;) {
      await behaviour.idle();
      if (done()) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  const rows: Row[] = [];
  const step = async (name: string, work: () => Promise<void> | void, done: () => boolean) => {
    events = 0;
    const cpu = process.cpuUsage();
    const start = performance.now();
    await work();
    await settle(done);
    const used = process.cpuUsage(cpu);
    const cpuMs = (used.user + used.system) / 1000;
    rows.push({
      step: name,
      wallMs: Math.round(performance.now() - start),
      cpuMs: Math.round(cpuMs),
      events,
      eventsPerCpuSecond: Math.round(events / (cpuMs / 1000)),
    });
  };
  const deployments = () => store.list(Resources.deployments, 'default');

  await step(
    'fleet pools=1000,clusters=100,nodes=50 (1,450 pods)',
    () => applyFleet(store, 'pools=1000,clusters=100,nodes=50').then(() => undefined),
    () => store.list(Resources.pods).every(ready),
  );
  await step(
    '+85 Deployments × 100 replicas',
    () => {
      for (let i = 0; i < 85; i++) {
        const labels = { app: `d${i}` };
        store.create(Resources.deployments, {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: `d${i}`, namespace: 'default' },
          spec: {
            replicas: 100,
            selector: { matchLabels: labels },
            template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'nginx:1' }] } },
          },
        });
      }
    },
    () => deployments().every((d) => d.status?.availableReplicas === 100),
  );
  const pods = store.count(Resources.pods);
  await step(
    'roll all 85 Deployments (8,500 pods replaced)',
    () => {
      for (const d of deployments()) {
        const next = structuredClone(d);
        next.spec.template.spec.containers[0].image = 'nginx:2';
        store.update(Resources.deployments, next);
      }
    },
    () =>
      deployments().every(
        (d) => d.status?.observedGeneration === 2 && d.status?.updatedReplicas === 100 && d.status?.availableReplicas === 100 && d.status?.replicas === 100,
      ),
  );
  const agents = store.list(Resources.pods, AGENT_NAMESPACE);
  await step(
    'delete + recreate 1,000 agent pods',
    async () => {
      for (const a of agents) store.delete(Resources.pods, AGENT_NAMESPACE, a.metadata.name);
      await settle(() => store.list(Resources.pods, AGENT_NAMESPACE).length === 0);
      agents.forEach((a, i) => {
        const pod = agentPod(
          'default',
          a.metadata.labels!['network.harvesterhci.io/ippool-name']!,
          i + 1,
          a.spec.nodeName,
          nodeIp(0),
          Date.now(),
          'rancher/harvester-vm-dhcp-agent:v0.3.1',
        );
        delete pod.status;
        store.create(Resources.pods, pod);
      });
    },
    () => {
      const now = store.list(Resources.pods, AGENT_NAMESPACE);
      return now.length === agents.length && now.every(ready);
    },
  );
  behaviour.stop();
  const rssMb = Math.round(process.memoryUsage().rss / 1e6);

  process.stdout.write(`\n${'step'.padEnd(52)} ${'wall ms'.padStart(8)} ${'cpu ms'.padStart(8)} ${'events'.padStart(8)} ${'events/cpu-s'.padStart(13)}\n`);
  for (const r of rows) {
    process.stdout.write(
      `${r.step.padEnd(52)} ${String(r.wallMs).padStart(8)} ${String(r.cpuMs).padStart(8)} ${String(r.events).padStart(8)} ${String(r.eventsPerCpuSecond).padStart(13)}\n`,
    );
  }
  process.stdout.write(`pods at peak: ${pods}; RSS: ${rssMb} MB (under tsx); load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}\n`);

  writeResult('sim-behaviour', {
    name: 'sim-behaviour',
    date: new Date().toISOString(),
    node: process.version,
    loadAverage: { before: loadBefore, after: loadavg()[0] },
    pods,
    rssMb,
    rows,
  });
  return { rows, rssMb, pods };
}

// A path, not a URL: the URL percent-encodes a space (or any other special character) in the checkout's path.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
