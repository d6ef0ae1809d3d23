import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../helpers/child.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI child: the parent's minus anything CI- or rollplane-specific, so tests decide. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^(GITHUB_|GITLAB_|CI_|ROLLPLANE_)/.test(key) || key === 'CI') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export interface RunningCli {
  done: Promise<CliRun>;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  kill(): void;
}

/** Starts `rollplane …` (src/rollplane.ts, its entry point, through tsx) as a child process. */
export function startCli(args: string[], env: Record<string, string> = {}, timeoutMs = 45_000): RunningCli {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/rollplane.ts'), ...args], {
    cwd: projectRoot,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rollplane ${args.join(' ')} did not exit in ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { done, stdout: () => stdout, stderr: () => stderr, kill: () => child.kill('SIGKILL') };
}

export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs?: number): Promise<CliRun> {
  return startCli(args, env, timeoutMs).done;
}
