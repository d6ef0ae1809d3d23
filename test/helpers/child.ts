import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** SIGKILLs `service` unless it has exited already, and waits until it has (a test's cleanup). */
export async function killIfRunning(service: ServiceProcess | undefined): Promise<void> {
  if (!service || service.child.exitCode !== null || service.child.signalCode !== null) return;
  service.child.kill('SIGKILL');
  await service.exited;
}

/** How to run the service: `src/main.ts` through tsx, or the build in dist/ exactly as `npm start` runs it. */
export interface ServiceEntry {
  /** Run dist/src/main.js (bring dist/ up to date first: `ensureBuilt()`). */
  built?: boolean;
}

/** Runs `src/main.ts` (through tsx) as a child process, exactly as `npm start` runs the built file; or the built file. */
export function spawnService(env: Record<string, string>, args: string[] = [], entry: ServiceEntry = {}): ChildProcess {
  const main = entry.built ? [path.join(projectRoot, 'dist/src/main.js')] : ['--import', 'tsx', path.join(projectRoot, 'src/main.ts')];
  return spawn(process.execPath, [...main, ...args], {
    cwd: projectRoot,
    // NODE_ENV as in a deployment: vitest sets `test`, which changes what libraries do (Apollo skips its signal handlers).
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', ROLLPLANE_SIM_MEMBER_CLUSTERS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Starts the service and waits for its "listening on" line. The bound only catches a service that never starts: tsx
 * compiling src/ on a machine at load 20+ took over 30 s (test/cli/auth.test.ts failed at 30 s).
 */
export async function startService(env: Record<string, string>, timeoutMs = 120_000, entry: ServiceEntry = {}): Promise<ServiceProcess> {
  const child = spawnService({ PORT: '0', ROLLPLANE_KUBE: 'sim', ROLLPLANE_SIM_FLEET: 'empty', ...env }, [], entry);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in ${timeoutMs} ms:\n${out}\n${err}`)), timeoutMs);
    const onData = () => {
      const match = /rollplane listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${out}\n${err}`));
    });
  });
  return { child, url, stdout: () => out, stderr: () => err, exited };
}

/** Brings dist/ up to date with the sources (`npm run build` unless it was built from them as they are: scripts/build.mjs). */
export async function ensureBuilt(): Promise<void> {
  const child = spawn(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the build failed (${code}):\n${output}`);
}

/** Runs the service to completion (for configuration errors) and returns its exit code and output. */
export function runService(
  env: Record<string, string>,
  args: string[] = [],
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnService(env, args);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('service did not exit'));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
