/** What the rollout benchmarks share: the real service pointed at a simulator's kubeconfig, and a GraphQL client. */
import path from 'node:path';
import { pino } from 'pino';
import { startApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config.js';

export { windowProfiler } from './cpuProfile.js';

/**
 * Starts rollplane on port 0 with its database in `dir`, driving the cluster behind `kubeconfigPath`, as one leader
 * without authentication and (unless `env` says otherwise) without a client-side API budget.
 */
export function startBenchApp(dir: string, kubeconfigPath: string, env: Record<string, string> = {}): Promise<App> {
  // As deploy/ runs the service (graphql-js is slower in development mode).
  process.env.NODE_ENV ??= 'production';
  const config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      // BENCH_DATABASE_URL=postgresql://… runs the same benchmark on PostgreSQL (an empty database per run is fairest).
      DATABASE_URL: process.env.BENCH_DATABASE_URL ?? `file:${path.join(dir, 'rollplane.db')}`,
      LOG_LEVEL: 'silent',
      ROLLPLANE_KUBE: 'kubeconfig',
      KUBECONFIG: kubeconfigPath,
      ROLLPLANE_LEADER_ELECT: 'false',
      ROLLPLANE_AUTH: 'off',
      ROLLPLANE_KUBE_QPS: '100000',
      ROLLPLANE_KUBE_BURST: '100000',
      // A/B of the response cache (ADR 0026): ROLLPLANE_RESPONSE_CACHE_MB=0 runs every query.
      ...(process.env.ROLLPLANE_RESPONSE_CACHE_MB ? { ROLLPLANE_RESPONSE_CACHE_MB: process.env.ROLLPLANE_RESPONSE_CACHE_MB } : {}),
      // A/B of the agent-pool controller's concurrent reconciles.
      ...(process.env.ROLLPLANE_AGENT_WORKERS ? { ROLLPLANE_AGENT_WORKERS: process.env.ROLLPLANE_AGENT_WORKERS } : {}),
      ...env,
    },
    [],
  );
  return startApp(config, { logger: pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }) });
}

/** POSTs a GraphQL operation; throws with the errors' messages. */
export async function post(url: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: any; errors?: { message: string }[] };
  if (body.errors) throw new Error(body.errors.map((e) => e.message).join('; '));
  return body.data;
}

/**
 * A fixed CPU workload (JSON round trips of a pod-sized object), timed: how fast this machine is right now. These
 * machines vary by half from one hour to the next; a figure divided by this one compares across runs.
 */
export function calibrationMs(): number {
  const object = {
    metadata: { name: 'default-net-1-agent', namespace: 'harvester-system', labels: { a: 'b', c: 'd' }, uid: '0f0e0d0c-0b0a-0908-0706-050403020100' },
    spec: {
      containers: Array.from({ length: 2 }, (_, i) => ({
        name: `c${i}`,
        image: 'rancher/harvester-vm-dhcp-agent:v0.3.1',
        args: ['--ippool-ref', 'default/net-1'],
      })),
    },
    status: {
      phase: 'Running',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: '2026-12-01T00:00:00Z',
      })),
    },
  };
  const started = performance.now();
  let size = 0;
  for (let i = 0; i < 50_000; i++) size += JSON.stringify(JSON.parse(JSON.stringify(object))).length;
  if (size === 0) throw new Error('unreachable');
  return Math.round(performance.now() - started);
}
