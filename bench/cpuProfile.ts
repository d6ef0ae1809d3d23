/**
 * Windowed V8 CPU profiles for the benchmarks: the same `.cpuprofile` JSON `node --cpu-prof` writes, but of the
 * measured window only (start-up, seeding and cache sync left out), through the inspector of the process itself, so
 * that it works alike in the service's process and in the simulator's child (bench/simChild.ts). Open one in Chrome
 * DevTools or speedscope, or summarise it with `node dist/bench/profileSummary.js <file>` (bench/profileSummary.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

/** Where profiles go: `BENCH_CPU_PROFILE=<dir>` (or its alias `AGENT_BENCH_CPU_PROF=<dir>`); undefined: none. */
export function profileDir(): string | undefined {
  return process.env.BENCH_CPU_PROFILE || process.env.AGENT_BENCH_CPU_PROF || undefined;
}

/**
 * With a profile directory set (profileDir()), records a V8 CPU profile of this process from `start()` to `stop()`
 * into `<dir>/<name>.cpuprofile`. A no-op otherwise.
 */
export function windowProfiler(name: string, dir = profileDir()): { start(): Promise<void>; stop(): Promise<string | undefined> } {
  if (!dir) return { start: async () => {}, stop: async () => undefined };
  const session = new Session();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) => session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result as T))));
  return {
    async start() {
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.start');
    },
    async stop() {
      const { profile } = await post<{ profile: object }>('Profiler.stop');
      session.disconnect();
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `${name}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}
