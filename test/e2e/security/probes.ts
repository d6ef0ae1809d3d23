import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { projectRoot } from '../../helpers/child.js';
import { until } from '../../helpers/until.js';

/** Milliseconds one GET of `url` took, its body read; it must answer 200. */
export async function timedGet(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url);
  await res.text();
  expect(res.status).toBe(200);
  return performance.now() - started;
}

/**
 * A process that answers every request at once: probed beside /healthz, it tells how much of a slow answer is the
 * machine's load (both wait for a core alike) rather than the service's event loop.
 */
export async function startControl(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    ['-e', "const s=require('http').createServer((q,r)=>r.end('ok')).listen(0,'127.0.0.1',()=>console.log(s.address().port))"],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk) => resolve(String(chunk).trim())));
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGKILL') };
}

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/**
 * Probes the control and the service's /healthz in turn, `count` times with `gapMs` between rounds, and returns both
 * sorted, with a line of their percentiles for the test's output.
 */
export async function probeBeside(healthzUrl: string, controlUrl: string, count: number, gapMs: number) {
  const healthz: number[] = [];
  const control: number[] = [];
  for (let i = 0; i < count; i++) {
    control.push(await timedGet(controlUrl));
    healthz.push(await timedGet(healthzUrl));
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  const h = [...healthz].sort((a, b) => a - b);
  const c = [...control].sort((a, b) => a - b);
  const figures = ([50, 90, 99, 100] as const)
    .map((p) => `${p === 100 ? 'max' : `p${p}`} ${percentile(h, p).toFixed(1)} ms (control ${percentile(c, p).toFixed(1)})`)
    .join(', ');
  return { healthz: h, control: c, figures };
}

/**
 * Runs an attacker script (`test/e2e/security/<script>`, under tsx, with `args`) while probing the service's /healthz
 * beside a control process, 300 probes 25 ms apart (the attack lasts as long as they take); stops both, and returns
 * the probes and what the attacker printed by the time it exited (its JSON report).
 */
export async function underAttack(script: string, args: string[], healthzUrl: string, ranEnough?: (output: string) => boolean) {
  const control = await startControl();
  const attacker = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/e2e/security', script), ...args], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let report = '';
  attacker.stdout!.on('data', (chunk) => (report += chunk));
  let probes: Awaited<ReturnType<typeof probeBeside>>;
  try {
    probes = await probeBeside(healthzUrl, control.url, 300, 25);
    // The attack goes on until it has done what the test needs of it (a signal, not a time: a fast machine ends the
    // probes sooner than the attacker's budget lets it get there).
    if (ranEnough) await until('the attacker ran enough', () => ranEnough(report), { timeoutMs: 120_000 });
  } finally {
    control.stop();
    // The attacker prints its report as it exits.
    attacker.kill('SIGTERM');
    await new Promise((resolve) => attacker.once('exit', resolve));
  }
  // The attacker's report is its last line (progress lines come before it).
  return { ...probes, report: report.trim().split('\n').at(-1) ?? '' };
}
