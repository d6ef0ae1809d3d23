/**
 * The agent-rollout benchmark's regression guard (docs/adr/0047). `npm run bench -- agent-rollout --check` compares
 * each run with the committed baseline (bench/baselines/agent-rollout.json) and names every figure that moved by more
 * than its tolerance; the command exits non-zero when one got worse. `--save-baseline` writes the baseline from a run
 * (do it on a quiet machine, after a change that moves the figures on purpose, and commit it).
 *
 * Compared: CPU per agent of the service and of the simulator, normalised by the machine's calibration (a figure
 * measured at calibration c counts as figure × baseline calibration ÷ c), writes and requests per agent (near-exact:
 * they are counts, not timings), and the peak RSS of both processes together. Wall times are not compared: they follow
 * the machine's load more than the code.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RESULTS_DIR } from './results.js';

/** The figures the guard compares, per run (keyed by caseKey()). */
export interface BaselineFigures {
  serviceCpuMsPerAgent: number;
  simulatorCpuMsPerAgent: number;
  writesPerAgent: number;
  requestsPerAgent: number;
  togetherPeakRssMb: number;
  calibrationMs: number;
}

export interface Baseline {
  date: string;
  node: string;
  note: string;
  tolerances: typeof TOLERANCES;
  runs: Record<string, BaselineFigures>;
}

/**
 * How far a figure may move before the guard names it. CPU: +30% after normalisation (the calibration follows the
 * machine's load only roughly; two runs on a shared machine differ by up to ~20%). Writes and requests per agent:
 * ±0.05 (a rare conflict retry moves them by 0.01). Peak RSS: +20% (GC timing).
 */
export const TOLERANCES = { cpuRatio: 1.3, perAgentAbsolute: 0.05, rssRatio: 1.2 } as const;

export const BASELINE_FILE = path.join(path.dirname(RESULTS_DIR), 'baselines', 'agent-rollout.json');

interface Run extends BaselineFigures {
  store: 'sqlite' | 'postgresql';
  pools: number;
  budget: string;
  simulator: 'child process' | 'inline';
  upstream: 'direct' | 'vm-dhcp';
}

export function keyOf(r: Pick<Run, 'store' | 'pools' | 'budget' | 'simulator' | 'upstream'>): string {
  return `${r.store} ${r.pools} ${r.budget} ${r.simulator === 'inline' ? 'embedded' : 'own process'} ${r.upstream}`;
}

export function saveBaseline(results: Run[], file = BASELINE_FILE): string {
  const runs: Record<string, BaselineFigures> = {};
  for (const r of results) {
    runs[keyOf(r)] = {
      serviceCpuMsPerAgent: r.serviceCpuMsPerAgent,
      simulatorCpuMsPerAgent: r.simulatorCpuMsPerAgent,
      writesPerAgent: r.writesPerAgent,
      requestsPerAgent: r.requestsPerAgent,
      togetherPeakRssMb: r.togetherPeakRssMb,
      calibrationMs: r.calibrationMs,
    };
  }
  const baseline: Baseline = {
    date: new Date().toISOString(),
    node: process.version,
    note: 'npm run bench -- agent-rollout --save-baseline; compared by --check (bench/agentBaseline.ts, docs/adr/0047)',
    tolerances: TOLERANCES,
    runs,
  };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(baseline, null, 2)}\n`);
  return file;
}

export interface Finding {
  run: string;
  figure: string;
  baseline: number;
  now: number;
  /** The measured figure before normalisation (CPU only). */
  measured?: number;
  worse: boolean;
}

/** Every figure outside its tolerance, better or worse, of the runs the baseline has. */
export function compare(results: Run[], baseline: Baseline): { findings: Finding[]; compared: string[]; missing: string[] } {
  const findings: Finding[] = [];
  const compared: string[] = [];
  const missing: string[] = [];
  for (const r of results) {
    const key = keyOf(r);
    const base = baseline.runs[key];
    if (!base) {
      missing.push(key);
      continue;
    }
    compared.push(key);
    const scale = base.calibrationMs / r.calibrationMs;
    for (const figure of ['serviceCpuMsPerAgent', 'simulatorCpuMsPerAgent'] as const) {
      if (base[figure] === 0) continue;
      const now = Math.round(r[figure] * scale * 100) / 100;
      const ratio = now / base[figure];
      if (ratio > TOLERANCES.cpuRatio || ratio < 1 / TOLERANCES.cpuRatio) {
        findings.push({ run: key, figure, baseline: base[figure], now, measured: r[figure], worse: ratio > 1 });
      }
    }
    for (const figure of ['writesPerAgent', 'requestsPerAgent'] as const) {
      if (Math.abs(r[figure] - base[figure]) > TOLERANCES.perAgentAbsolute) {
        findings.push({ run: key, figure, baseline: base[figure], now: r[figure], worse: r[figure] > base[figure] });
      }
    }
    const rss = r.togetherPeakRssMb / base.togetherPeakRssMb;
    if (rss > TOLERANCES.rssRatio || rss < 1 / TOLERANCES.rssRatio) {
      findings.push({ run: key, figure: 'togetherPeakRssMb', baseline: base.togetherPeakRssMb, now: r.togetherPeakRssMb, worse: rss > 1 });
    }
  }
  return { findings, compared, missing };
}

/** Prints the comparison; true when a figure got worse beyond its tolerance. */
export function checkAgainstBaseline(results: Run[], file = BASELINE_FILE): boolean {
  if (!existsSync(file)) {
    console.log(`--check: no baseline at ${file} (npm run bench -- agent-rollout --save-baseline writes one)`);
    return true;
  }
  const baseline = JSON.parse(readFileSync(file, 'utf8')) as Baseline;
  const { findings, compared, missing } = compare(results, baseline);
  console.log(
    `--check against ${path.relative(process.cwd(), file)} (${baseline.date}); tolerances: CPU per agent ×${TOLERANCES.cpuRatio} after normalising by the calibration, writes and requests per agent ±${TOLERANCES.perAgentAbsolute}, peak RSS ×${TOLERANCES.rssRatio}`,
  );
  for (const f of findings) {
    const measured = f.measured !== undefined ? ` (measured ${f.measured}, normalised ${f.now})` : ` (now ${f.now})`;
    console.log(`  ${f.worse ? 'REGRESSION' : 'improved  '} ${f.run}: ${f.figure} ${f.baseline} → ${f.now}${measured}`);
  }
  if (missing.length > 0) console.log(`  not in the baseline (not compared): ${missing.join('; ')}`);
  const worse = findings.filter((f) => f.worse);
  console.log(
    worse.length > 0
      ? `--check: ${worse.length} figure(s) regressed beyond tolerance in ${compared.length} compared run(s)`
      : `--check: no regression in ${compared.length} compared run(s)${findings.length > 0 ? ' (improvements: consider --save-baseline)' : ''}`,
  );
  return worse.length > 0 || compared.length === 0;
}
