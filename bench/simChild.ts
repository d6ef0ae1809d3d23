/**
 * The simulator in a child process, for the rollout benchmarks: rollplane's process then holds rollplane alone, so its
 * CPU and memory are rollplane's, and the simulator (standing in for a real API server, which would never share
 * rollplane's event loop) uses the other core. The child counts the API requests it serves between `start()` and
 * `stats()`, tracks its CPU and peak RSS, and can report the moment a number of pods run a given image and are Ready.
 *
 * Run as a module (`startSimChild`) by the benchmarks; run as a script it is the child itself.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApiRequestInfo, KubeObject } from '../src/sim/types.js';
import { type AgentChecks, AgentTracker } from './agentTracker.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface SimChildOptions {
  /** A fleet spec such as `pools=1000,nodes=10,peers=0`. */
  fleet: string;
  kubeconfigPath: string;
  /** V8 heap cap of the child in MB (`--max-old-space-size`); 0 or absent: V8's default, sized from the host. */
  heapMb?: number;
  /**
   * `flat-out` (default): no simulated delays, so a rollout runs as fast as the CPU allows. `natural`: the simulator's
   * default delays (pods take about 1.5 s to schedule, start and turn Ready), so events come at a rollout's own pace.
   */
  pace?: 'flat-out' | 'natural';
}

export interface SimChildStats {
  requests: number;
  /** The simulator's CPU profile of the counted window, when one was asked for (`start(profileName)`). */
  profile?: string;
  /** Agent recreations and the most pools down at once, during the counted window (bench/agentTracker.ts). */
  agents: AgentChecks;
  /** `verb plural` → count, for create/update/patch/delete. */
  writes: Record<string, number>;
  cpuMs: number;
  peakRssMb: number;
}

export interface SimChild {
  kubeconfigPath: string;
  /** The child's RSS in bytes right now (0 when it cannot be read, or for an inline simulator). */
  rss(): number;
  /**
   * Starts counting requests, CPU and peak RSS; with a profile directory set (bench/cpuProfile.ts), also records the
   * simulator's CPU profile as `<dir>/<profileName>.cpuprofile` until `stats()`.
   */
  start(profileName?: string): Promise<void>;
  /** Resolves with the child's wall-clock time (ms) once `count` pods run `image` (first container) and are Ready. */
  podsOnImage(image: string, count: number): Promise<number>;
  /** Stops counting and returns what was counted since `start()`. */
  stats(): Promise<SimChildStats>;
  stop(): Promise<void>;
}

type Message = Record<string, unknown>;

/** Resident set size of another process, from /proc (Linux); 0 elsewhere. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return pages * 4096;
  } catch {
    return 0;
  }
}

export async function startSimChild(options: SimChildOptions): Promise<SimChild> {
  // With the old space capped, V8 also shrinks the young generation, which costs ~30% CPU at this allocation rate;
  // 16 MB semi-spaces are what it picks uncapped on a large host.
  const heap = options.heapMb ? [`--max-old-space-size=${options.heapMb}`, '--max-semi-space-size=16'] : [];
  // The same form as this module: compiled (dist/bench) or the sources under tsx.
  const ext = path.extname(fileURLToPath(import.meta.url));
  const loader = ext === '.ts' ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...heap, ...loader, path.join(HERE, `simChild${ext}`)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ROLLPLANE_BENCH_SIM_CHILD: JSON.stringify(options) },
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  const next = <T>(key: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: Message) => {
        if (!(key in m)) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m[key] as T);
      };
      const onExit = (code: number | null) => reject(new Error(`simulator child exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ask = <T>(message: Message, key: string) => {
    const answer = next<T>(key);
    child.send(message);
    return answer;
  };
  const kubeconfigPath = await next<string>('ready');
  return {
    kubeconfigPath,
    rss: () => rssOf(child.pid),
    start: (profileName) => ask<boolean>({ start: true, profileName }, 'started').then(() => undefined),
    podsOnImage: (image, count) => ask<number>({ podsOnImage: { image, count } }, 'podsOnImageAt'),
    stats: () => ask<SimChildStats>({ stats: true }, 'stats'),
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.send({ stop: true });
      }),
  };
}

/** A simulator started with counting hooks, and what the benchmark asks of it (in this process or in the child). */
async function instrumentedSimulator(options: SimChildOptions) {
  const { startSimulator } = await import('../src/sim/index.js');
  const { defaultDelays, zeroDelays } = await import('../src/sim/behaviour/index.js');
  const { windowProfiler } = await import('./cpuProfile.js');
  let profiler: ReturnType<typeof windowProfiler> | undefined;
  let counting = false;
  let requests = 0;
  let writes: Record<string, number> = {};
  let cpu = process.cpuUsage();
  let peakRss = 0;
  let tracker: AgentTracker | undefined;
  let untrack: (() => void) | undefined;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
  sampler.unref();
  const sim = await startSimulator({
    fleet: options.fleet,
    delays: options.pace === 'natural' ? defaultDelays : zeroDelays,
    kubeconfigPath: options.kubeconfigPath,
    hooks: {
      beforeRequest: (info: ApiRequestInfo) => {
        if (!counting || info.verb === 'watch') return;
        requests++;
        if (info.verb === 'get' || info.verb === 'list') return;
        const key = `${info.verb} ${info.resource.plural}`;
        writes[key] = (writes[key] ?? 0) + 1;
      },
    },
  });
  return {
    sim,
    kubeconfigPath: sim.kubeconfigPath,
    async start(profileName?: string) {
      if (profileName) {
        profiler = windowProfiler(profileName);
        await profiler.start();
      }
      untrack?.();
      const t = new AgentTracker(sim.store.list(sim.store.resourceType('', 'pods')!));
      tracker = t;
      untrack = sim.store.subscribe((event) => t.onEvent(event));
      counting = true;
      requests = 0;
      writes = {};
      cpu = process.cpuUsage();
      peakRss = process.memoryUsage.rss();
    },
    podsOnImage(image: string, count: number): Promise<number> {
      const isOn = (pod: KubeObject) =>
        pod.spec?.containers?.[0]?.image === image &&
        !pod.metadata.deletionTimestamp &&
        (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
      const on = new Set<string>();
      for (const pod of sim.store.list(sim.store.resourceType('', 'pods')!)) if (isOn(pod)) on.add(`${pod.metadata.namespace}/${pod.metadata.name}`);
      if (on.size >= count) return Promise.resolve(Date.now());
      return new Promise((resolve) => {
        const unsubscribe = sim.store.subscribe((event) => {
          if (event.resource.plural !== 'pods' || event.resource.group !== '') return;
          const key = `${event.object.metadata.namespace}/${event.object.metadata.name}`;
          if (event.type !== 'DELETED' && isOn(event.object)) on.add(key);
          else on.delete(key);
          if (on.size < count) return;
          unsubscribe();
          resolve(Date.now());
        });
      });
    },
    async stats(): Promise<SimChildStats> {
      counting = false;
      const used = process.cpuUsage(cpu);
      untrack?.();
      untrack = undefined;
      const agents = tracker?.checks() ?? new AgentTracker([]).checks();
      const profile = await profiler?.stop();
      profiler = undefined;
      return {
        requests,
        writes,
        cpuMs: (used.user + used.system) / 1000,
        peakRssMb: Math.round(peakRss / 1048576),
        agents,
        ...(profile ? { profile } : {}),
      };
    },
    async stop() {
      clearInterval(sampler);
      await sim.stop();
    },
  };
}

/**
 * The same simulator in this process (`ROLLPLANE_BENCH_SIM=inline`): how rollplane runs by default, with its embedded
 * simulator, both sharing one event loop. CPU and peak RSS are then the whole process's.
 */
export async function startInlineSim(options: SimChildOptions): Promise<SimChild> {
  const sim = await instrumentedSimulator(options);
  return {
    kubeconfigPath: sim.kubeconfigPath,
    rss: () => 0,
    // Inline, the service's profile already holds the simulator: no second profiler.
    start: () => sim.start(),
    podsOnImage: (image, count) => sim.podsOnImage(image, count),
    stats: () => sim.stats(),
    stop: () => sim.stop(),
  };
}

async function runChild(options: SimChildOptions): Promise<void> {
  const sim = await instrumentedSimulator(options);
  const send = (m: Message) => process.send!(m);
  process.on('message', (m: Message) => {
    if (m.start) {
      void sim.start(m.profileName as string | undefined).then(() => send({ started: true }));
    } else if (m.podsOnImage) {
      const { image, count } = m.podsOnImage as { image: string; count: number };
      void sim.podsOnImage(image, count).then((at) => send({ podsOnImageAt: at }));
    } else if (m.stats) {
      void sim.stats().then((stats) => send({ stats }));
    } else if (m.stop) {
      void sim.stop().then(() => process.exit(0));
    }
  });
  process.on('disconnect', () => process.exit(0));
  send({ ready: sim.kubeconfigPath });
}

const childOptions = process.env.ROLLPLANE_BENCH_SIM_CHILD;
if (childOptions && process.send) await runChild(JSON.parse(childOptions) as SimChildOptions);
