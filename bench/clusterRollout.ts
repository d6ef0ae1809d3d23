/**
 * The rollout half of `npm run bench -- clusters` (issue 29, docs/adr/0058): one `bumpAgentImage` over every member
 * cluster's pools, against the same number of pools in ONE member cluster, and the same rollout with a share of the
 * clusters black-holed mid-rollout. Run by bench/clusters.ts, which owns the processes: for each size N
 * (BENCH_CLUSTER_ROLLOUT_SIZES), one simulator child and one rollplane child, fresh for this part (the registration
 * half's processes are not reused, so its figures stay what they were):
 * - the simulator child holds `mgmt` (local, no pools, no behaviour), `solo` (one cluster of 3×N pools) and `edge-1` …
 *   `edge-N` (3 pools each), every one but `mgmt` with its simulated behaviour on and zero delays (agents recreated and
 *   turning Ready as fast as the CPU allows, as bench/agentRollout.ts runs its simulator), and the admin endpoint;
 * - the rollplane child registers `solo` (`tier=solo`) and the edges (`tier=edge`), waits until each is driven by its
 *   own runtime, then runs three rollouts in turn, each with maxUnavailable 10%, autoRollback off and a failure
 *   threshold above any count of targets:
 *   1. `baseline`: `memberClusters: { names: ["solo"] }` — 3×N pools in one cluster;
 *   2. `spread`: `memberClusters: { labelSelector: "tier=edge" }` — the same 3×N pools over N clusters;
 *   3. `blackholed`: the same selection to a third image; as soon as the first target is PROGRESSING, every tenth
 *      edge (edge-10, edge-20, … : BENCH_CLUSTER_BLACKHOLE_EVERY) is switched to `blackhole` through
 *      `PUT /sim/clusters/<name>` (no answer at all). Its targets must fail at their progress deadline
 *      (BENCH_CLUSTER_DEADLINE_S, default 15) with an error naming the cluster; the healthy clusters' last target
 *      SUCCEEDED is compared with the spread run's.
 * Each time runs from the mutation's POST to the event that ends it (the service's bus, no polling).
 */
import os from 'node:os';
import type { App } from '../src/app.js';
import { post, startBenchApp, windowProfiler } from './benchApp.js';

export const ROLLOUT_IMAGES = ['rancher/harvester-vm-dhcp-agent:v0.3.1', 'rancher/harvester-vm-dhcp-agent:v0.3.2'] as const;

export interface RolloutRun {
  name: 'baseline' | 'spread' | 'blackholed';
  clusters: number;
  targets: number;
  /** From the mutation's POST to the rollout's end. */
  seconds: number;
  /** From the (last) POST to its answer: planning and the preflight in every selected cluster. */
  bumpSeconds: number;
  /** From the POST to the last SUCCEEDED target of a cluster not black-holed. */
  healthySeconds: number;
  succeeded: number;
  failed: number;
  /** Failed targets whose error names their own (black-holed) cluster. */
  failedNamingCluster: number;
  state: string;
  cpuMs: number;
  peakRssMb: number;
  /** Bumps refused UNAVAILABLE (a member not driven at that instant) and sent again; their time is in `seconds`. */
  refusedBumps: number;
  loadAverage: number[];
}

export interface RolloutFigures {
  clusters: number;
  pools: number;
  blackholed: string[];
  deadlineSeconds: number;
  runs: RolloutRun[];
  /** spread ÷ baseline (aim ≤ 1.5). */
  spreadRatio: number;
  /** the black-holed run's healthy clusters ÷ spread (aim ≤ 1.1); null when that run stalled. */
  healthyRatio: number | null;
}

const FLEET_EDGE = 'pools=3,nodes=1,peers=0';
const soloFleet = (size: number) => `pools=${3 * size},nodes=${Math.max(1, Math.ceil((3 * size) / 100))},peers=0`;

export function blackholedOf(size: number, every = Number(process.env.BENCH_CLUSTER_BLACKHOLE_EVERY ?? 10)): string[] {
  return Array.from({ length: Math.floor(size / every) }, (_, i) => `edge-${(i + 1) * every}`);
}

/**
 * How many simulator children the rollout part's clusters are spread over: one process holding 1,001 simulated
 * clusters with their behaviour answered too slowly for any member timeout at load 9–13 (the 1,000-cluster try of
 * 2026-12-05), so a child holds at most BENCH_CLUSTER_SIMS_PER_PROCESS (250) edges.
 */
export function simProcessesFor(size: number, perProcess = Number(process.env.BENCH_CLUSTER_SIMS_PER_PROCESS ?? 250)): number {
  return Math.max(1, Math.ceil(size / perProcess));
}

/** The simulator child `part` of `parts`: child 0 holds `mgmt` and `solo`, every child its share of the edges. */
export async function startRolloutClusters(size: number, dir: string, part = 0, parts = 1) {
  const { startSimulatedClusters } = await import('../src/sim/simulatedClusters.js');
  const { zeroDelays } = await import('../src/sim/behaviour/index.js');
  const edges = Array.from({ length: size }, (_, i) => i + 1).filter((n) => n % parts === part);
  return startSimulatedClusters({
    dir,
    concurrency: 64,
    adminPort: 0,
    clusters: [
      ...(part === 0
        ? [
            { name: 'mgmt', behaviour: false as const },
            { name: 'solo', fleet: soloFleet(size), delays: zeroDelays },
          ]
        : []),
      ...edges.map((n) => ({ name: `edge-${n}`, fleet: FLEET_EDGE, delays: zeroDelays })),
    ],
  });
}

export const labelsOf = (name: string): Record<string, string> => ({ tier: name === 'solo' ? 'solo' : 'edge' });

const BUMP = 'mutation B($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } plan { cluster } } }';

/** In the rollplane child: the three rollouts, once every member is driven. */
export async function runRollouts(
  app: App,
  { size, adminUrls, deadlineSeconds }: { size: number; adminUrls: Record<string, string>; deadlineSeconds: number },
): Promise<RolloutFigures> {
  const members = ['solo', ...Array.from({ length: size }, (_, i) => `edge-${i + 1}`)];
  // Before each run: a bump refuses (UNAVAILABLE) when a selected member is not driven at that instant.
  const everyMemberDriven = async (before: string) => {
    const waitStarted = performance.now();
    let toldAt = 0;
    for (;;) {
      const running = new Set((app.memberRuntimes?.snapshot() ?? []).filter((r) => r.running && r.kinds.includes('AGENT_POOL')).map((r) => r.cluster));
      const driven = members.filter((m) => running.has(m) && app.memberClusters.connections.get(m)?.health().state === 'READY').length;
      if (driven === members.length) break;
      // At 1,000 clusters this wait is minutes: say how far it got, every 10 s.
      const seconds = Math.floor((performance.now() - waitStarted) / 10_000) * 10;
      if (seconds > toldAt) {
        toldAt = seconds;
        process.stderr.write(
          `  ${size} clusters, before ${before}: ${driven} of ${members.length} members driven after ${seconds} s; load ${os.loadavg()[0]!.toFixed(1)}\n`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    process.stderr.write(`  ${size} clusters, before ${before}: every member driven after ${((performance.now() - waitStarted) / 1000).toFixed(1)} s\n`);
  };
  const blackholed = blackholedOf(size);
  const stallSeconds = Number(process.env.BENCH_CLUSTER_STALL_S ?? 4 * deadlineSeconds + 120);
  const strategy = { maxUnavailable: '10%', autoRollback: false, progressDeadlineSeconds: deadlineSeconds, failureThreshold: 100_000 };
  const one = async (name: RolloutRun['name'], image: string, memberClusters: Record<string, unknown>, cut: string[]): Promise<RolloutRun> => {
    const lost = new Set(cut);
    const errors = new Map<string, number>();
    let rolloutId: string | undefined;
    let succeeded = 0;
    let failed = 0;
    let failedNamingCluster = 0;
    let lastHealthy = 0;
    let cutting: Promise<unknown> | undefined;
    let peakRss = process.memoryUsage.rss();
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 250);
    const ended = new Promise<string>((resolve) => {
      const unsubscribe = app.bus.subscribe((event) => {
        if (rolloutId !== undefined && event.rolloutId !== rolloutId) return;
        if (event.type === 'TargetStateChanged' && event.payload.to === 'PROGRESSING' && cut.length > 0 && !cutting) {
          // Mid-rollout: the first admission switches the black holes on (each PUT answers once its door is switched).
          cutting = Promise.all(
            cut.map((c) =>
              fetch(`${adminUrls[c]}/sim/clusters/${c}`, {
                method: 'PUT',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ state: 'blackhole' }),
              }),
            ),
          );
        }
        if (event.type === 'TargetStateChanged' && event.payload.to === 'SUCCEEDED') {
          succeeded++;
          if (!lost.has(String(event.cluster))) lastHealthy = performance.now();
        }
        if (event.type === 'TargetFailed') {
          failed++;
          // The errors, by their first words with the cluster's name taken out: what made targets fail.
          const why = String(event.payload.error)
            .replaceAll(String(event.cluster), '<cluster>')
            .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
            .slice(0, 140);
          errors.set(why, (errors.get(why) ?? 0) + 1);
          if (String(event.payload.error).includes(`member cluster ${event.cluster} `)) failedNamingCluster++;
        }
        if (event.type === 'RolloutStateChanged' && ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(String(event.payload.to))) {
          unsubscribe();
          resolve(String(event.payload.to));
        }
      });
    });
    await everyMemberDriven(name);
    const profiler = windowProfiler(`clusters-rollout-${size}-${name}-service`);
    await profiler.start();
    const cpu = process.cpuUsage();
    const started = performance.now();
    let refusedBumps = 0;
    const progress = setInterval(() => {
      process.stderr.write(
        `  ${size} clusters, ${name}: ${Math.round((performance.now() - started) / 1000)} s, ${succeeded} succeeded, ${failed} failed; load ${os.loadavg()[0]!.toFixed(1)}\n`,
      );
    }, 10_000);
    try {
      // A bump refused because a selected member was not driven at that instant (a probe missed on a loaded machine)
      // is sent again once every member is driven, as a pipeline retries UNAVAILABLE; the refusals are reported.
      let data: Awaited<ReturnType<typeof post>>;
      // How long the bump took to answer (its planning and preflight in every selected cluster), the last attempt's.
      let bumpSeconds = 0;
      for (;;) {
        try {
          const posted = performance.now();
          data = await post(app.url, BUMP, { input: { image, memberClusters, strategy } });
          bumpSeconds = (performance.now() - posted) / 1000;
          break;
        } catch (error) {
          if (!String(error).includes('cannot plan in every selected cluster') || refusedBumps >= 10) throw error;
          refusedBumps++;
          process.stderr.write(`  ${size} clusters, ${name}: bump refused (${String(error).slice(0, 160)}…); again\n`);
          await everyMemberDriven(name);
        }
      }
      rolloutId = data.bumpAgentImage.rollout.id;
      const targets = data.bumpAgentImage.plan.length as number;
      // A rollout that stops moving is reported, not waited on forever (the stall seen with a black-holed member).
      let stallTimer: NodeJS.Timeout | undefined;
      const stalled = new Promise<string>((resolve) => (stallTimer = setTimeout(() => resolve('STALLED'), stallSeconds * 1000)));
      const state = await Promise.race([ended, stalled]);
      clearTimeout(stallTimer);
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      await cutting;
      const profile = await profiler.stop();
      if (state === 'STALLED')
        process.stderr.write(
          `  ${name}: no end after ${stallSeconds} s; targets by cluster and state: ${await targetStates(app, rolloutId!).catch((error: unknown) => String(error))}\n`,
        );
      if (profile) process.stderr.write(`  CPU profile of the ${name} rollout: ${profile}\n`);
      for (const [why, count] of [...errors].sort((a, b) => b[1] - a[1]).slice(0, 5)) process.stderr.write(`  ${name}: ${count} failed: ${why}\n`);
      const round = (n: number) => Math.round(n * 100) / 100;
      return {
        name,
        clusters: name === 'baseline' ? 1 : size,
        targets,
        seconds: round(seconds),
        bumpSeconds: round(bumpSeconds),
        healthySeconds: round((lastHealthy - started) / 1000),
        succeeded,
        failed,
        failedNamingCluster,
        state,
        cpuMs: Math.round((used.user + used.system) / 1000),
        peakRssMb: Math.round(peakRss / 1048576),
        refusedBumps,
        loadAverage: os.loadavg().map((l) => Math.round(l * 10) / 10),
      };
    } finally {
      clearInterval(progress);
      clearInterval(sampler);
    }
  };
  const edges = { labelSelector: 'tier=edge' };
  const said = (run: RolloutRun) => {
    process.stderr.write(`  ${size} clusters, ${run.name}: ${JSON.stringify(run)}\n`);
    return run;
  };
  const baseline = said(await one('baseline', ROLLOUT_IMAGES[0], { names: ['solo'] }, []));
  const spread = said(await one('spread', ROLLOUT_IMAGES[0], edges, []));
  const cut = said(await one('blackholed', ROLLOUT_IMAGES[1], edges, blackholed));
  return {
    clusters: size,
    pools: 3 * size,
    blackholed,
    deadlineSeconds,
    runs: [baseline, spread, cut],
    spreadRatio: Math.round((spread.seconds / baseline.seconds) * 100) / 100,
    healthyRatio: cut.state === 'STALLED' ? null : Math.round((cut.healthySeconds / spread.healthySeconds) * 100) / 100,
  };
}

/** `state@cluster×count` of a rollout's targets, a page of 1,000 at a time (what a stalled run reports). */
async function targetStates(app: App, id: string): Promise<string> {
  const counts = new Map<string, number>();
  const query =
    'query ($id: ID!, $after: String) { rollout(id: $id) { targets(first: 1000, after: $after) { pageInfo { hasNextPage endCursor } edges { node { cluster state } } } } }';
  for (let after: string | undefined; ; ) {
    const { targets } = (await post(app.url, query, { id, after })).rollout;
    for (const { node } of targets.edges as { node: { cluster: string; state: string } }[]) {
      const key = `${node.state}${node.state === 'SUCCEEDED' ? '' : `@${node.cluster}`}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    if (!targets.pageInfo.hasNextPage) break;
    after = targets.pageInfo.endCursor;
  }
  return [...counts].map(([key, n]) => `${key}×${n}`).join(', ');
}

/** The rollplane child of the rollout part: the service with its members, the three rollouts, the figures. */
export async function runRolloutApp({
  dir,
  local,
  size,
  adminUrls,
  deadlineSeconds,
}: {
  dir: string;
  local: string;
  size: number;
  /** Each member's simulator child's admin endpoint. */
  adminUrls: Record<string, string>;
  deadlineSeconds: number;
}) {
  const app = await startBenchApp(dir, local, {
    ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
    ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '30000',
    // Unthrottled, as startBenchApp runs local: the default 20 QPS per member made the one-cluster baseline wait for
    // its budget (one wave of 30 pools per 10 s) while N members spent N budgets.
    ROLLPLANE_MEMBER_CLUSTER_QPS: process.env.BENCH_CLUSTER_MEMBER_QPS ?? '100000',
    ROLLPLANE_MEMBER_CLUSTER_BURST: process.env.BENCH_CLUSTER_MEMBER_QPS ?? '100000',
    // A black-holed member noticed within seconds, not the default 30 s probe and 10 s timeout; at 1,000 members a
    // probe every 2 s is 500 a second, so the interval grows with the size (10 ms a member, at least 2 s).
    ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: process.env.BENCH_CLUSTER_PROBE_MS ?? String(Math.max(2000, 10 * size)),
    ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: process.env.BENCH_CLUSTER_TIMEOUT_MS ?? '2000',
  });
  const figures = await runRollouts(app, { size, adminUrls, deadlineSeconds });
  return { app, figures };
}
