import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { diesWithParent, freeLoopbackPort, isExecutable } from '../util/localProcess.js';
import { AnalysisUnavailableError } from './errors.js';

/**
 * A Prometheus of the machine's own (Debian's `prometheus` package: /usr/bin/prometheus), started on a free loopback
 * port with a configuration and a data directory of its own in a temporary directory, scraping the targets given.
 * Tests use it (test/helpers/prometheus.ts), and so can a demo: analysis measures against a real Prometheus, never a
 * stand-in. Nothing is ever downloaded: without the binary, starting one fails with AnalysisUnavailableError.
 */

export interface ScrapeTarget {
  /** Base URL of the target, e.g. the simulator's `http://127.0.0.1:41234`. */
  url: string;
  /** Default `/metrics`. */
  metricsPath?: string;
  /** Default `rollplane-sim`. */
  job?: string;
}

export interface LocalPrometheusOptions {
  /** Default: `prometheus` on PATH, then /usr/bin/prometheus. */
  binary?: string;
  targets: readonly ScrapeTarget[];
  /** Scrape and rule evaluation interval; default 1 s (Prometheus's own default is 1 m). */
  scrapeIntervalMs?: number;
  /** Called with each line Prometheus logs (it logs to stderr); default: kept for the error of a failed start. */
  onLog?: (line: string) => void;
  /** A rule file (Prometheus's YAML: `groups: [{name, rules: [{alert, expr, for}]}]`), evaluated every interval. */
  rules?: string;
  /** A loopback port chosen beforehand (its URL was handed out before the start); default: a free one. */
  port?: number;
}

export interface LocalPrometheus {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  readonly scrapeIntervalMs: number;
  /** Kills the process but keeps its data and port, for outage tests; `restart` brings it back on both. */
  shutDown(): Promise<void>;
  restart(): Promise<void>;
  /** Resolves when the process is gone and its directory removed. */
  stop(): Promise<void>;
}

/** The Prometheus binary of the machine, or undefined when it has none. */
export function findPrometheusBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [...(env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const file = path.join(dir, 'prometheus');
    if (isExecutable(file)) return file;
  }
  return undefined;
}

export const PROMETHEUS_NOT_INSTALLED =
  "no Prometheus binary on this machine (PATH, /usr/bin, /usr/local/bin): install Debian's `prometheus` package (`apt-get install prometheus`) or point analysis at a running Prometheus";

/** A Prometheus duration of whole milliseconds. */
function duration(ms: number): string {
  return `${Math.max(1, Math.round(ms))}ms`;
}

/** The configuration file: one job per target, scraped every `intervalMs`; the rule files given, evaluated as often. */
export function prometheusConfig(targets: readonly ScrapeTarget[], intervalMs: number, ruleFiles: readonly string[] = []): string {
  return stringify({
    global: { scrape_interval: duration(intervalMs), evaluation_interval: duration(intervalMs), scrape_timeout: duration(intervalMs) },
    ...(ruleFiles.length > 0 ? { rule_files: ruleFiles } : {}),
    scrape_configs: targets.map((target, i) => {
      const url = new URL(target.url);
      return {
        job_name: target.job ?? (targets.length === 1 ? 'rollplane-sim' : `rollplane-sim-${i + 1}`),
        metrics_path: target.metricsPath ?? '/metrics',
        scheme: url.protocol.replace(':', ''),
        static_configs: [{ targets: [url.host] }],
      };
    }),
  });
}

/** One Prometheus process on `port`: resolves 'ready' once /-/ready answers 200, else why not (with its last log lines). */
async function spawnPrometheus(
  binary: string,
  dir: string,
  port: number,
  onLog: ((line: string) => void) | undefined,
): Promise<{ child: ChildProcess; ready: string; log: string[] }> {
  const log: string[] = [];
  // It dies with this process: a SIGKILLed service left its demo Prometheus running, holding its port (attack 19, F13).
  const command = diesWithParent(binary, [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  const child = spawn(command.command, command.args, { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n').filter(Boolean)) {
      onLog?.(line);
      log.push(line);
      if (log.length > 50) log.shift();
    }
  });
  const ready = await waitReady(`http://127.0.0.1:${port}`, child);
  if (ready !== 'ready') await stopProcess(child, undefined);
  return { child, ready, log };
}

/**
 * Starts Prometheus and resolves once its /-/ready answers 200 (it then serves queries). A port taken between the probe
 * and Prometheus's bind is retried on another (a few times). Fails with the last lines Prometheus logged.
 */
export async function startLocalPrometheus(options: LocalPrometheusOptions): Promise<LocalPrometheus> {
  const binary = options.binary ?? findPrometheusBinary();
  if (!binary || !isExecutable(binary)) throw new AnalysisUnavailableError('PROMETHEUS_NOT_INSTALLED', PROMETHEUS_NOT_INSTALLED);
  const scrapeIntervalMs = options.scrapeIntervalMs ?? 1000;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-prometheus-'));
  const ruleFiles = options.rules === undefined ? [] : [path.join(dir, 'rules.yml')];
  if (options.rules !== undefined) writeFileSync(ruleFiles[0]!, options.rules);
  writeFileSync(path.join(dir, 'prometheus.yml'), prometheusConfig(options.targets, scrapeIntervalMs, ruleFiles));
  const failed = (why: string, log: string[]) => {
    rmSync(dir, { recursive: true, force: true });
    return new AnalysisUnavailableError('PROMETHEUS_DID_NOT_START', `Prometheus (${binary}) did not start: ${why}\n${log.join('\n')}`);
  };
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freeLoopbackPort());
    let { child, ready, log } = await spawnPrometheus(binary, dir, port, options.onLog);
    if (ready === 'ready') {
      return {
        url: `http://127.0.0.1:${port}`,
        port,
        scrapeIntervalMs,
        shutDown: () => stopProcess(child, undefined),
        async restart() {
          // The port was free while it was down: another process may have taken it, which fails here, loudly.
          ({ child, ready, log } = await spawnPrometheus(binary, dir, port, options.onLog));
          if (ready !== 'ready') throw failed(ready, log);
        },
        stop: () => stopProcess(child, dir),
      };
    }
    if (options.port !== undefined || attempt >= 3 || !log.some((line) => /address already in use/.test(line))) throw failed(ready, log);
  }
}

/** Polls /-/ready every 100 ms (a local process's start, not a scrape) until 200, the process exits, or 60 s. */
async function waitReady(url: string, child: ChildProcess): Promise<'ready' | string> {
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited (${signal ?? code})`;
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited) return exited;
    try {
      const response = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) });
      await response.text();
      if (response.status === 200) return 'ready';
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return 'not ready within 60 s';
}

function stopProcess(child: ChildProcess, dir: string | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      if (dir) rmSync(dir, { recursive: true, force: true });
      resolve();
    };
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', done);
    child.kill('SIGKILL');
  });
}
