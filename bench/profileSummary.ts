/**
 * Summarises V8 CPU profiles (`.cpuprofile` JSON, from `node --cpu-prof` or bench/cpuProfile.ts): self time by
 * function and by module (the file, folded to `node_modules/<package>` or `src/<folder>`), as milliseconds and, with
 * `--per=<n>`, milliseconds per unit of work (per agent, for the rollout benchmarks). Nothing downloaded, no viewer.
 *
 *   node dist/bench/profileSummary.js [--top=25] [--per=10000] [--by=module|function|both] a.cpuprofile [b.cpuprofile]
 *
 * Two files: the second is compared with the first (before → after, by module and by function).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileTotals {
  totalMs: number;
  byFunction: Map<string, number>;
  byModule: Map<string, number>;
}

/** `src/sim/api/ApiServer.ts` → `src/sim/api`; `…/node_modules/@scope/pkg/…` → `@scope/pkg`; builtins as V8 names them. */
export function moduleOf(url: string): string {
  if (!url) return '(native)';
  const file = url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = file.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (file.startsWith('node:')) return file;
  const src = file.search(/\/(src|bench)\//);
  if (src >= 0) {
    const rel = file.slice(src + 1);
    return path.dirname(rel);
  }
  return file;
}

function shortFile(url: string): string {
  const file = url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) return file.slice(nm + '/node_modules/'.length);
  const src = file.search(/\/(src|bench)\//);
  return src >= 0 ? file.slice(src + 1) : file;
}

export function summarise(profile: CpuProfile): ProfileTotals {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample; it is spent on sample i (V8's convention, as DevTools reads it).
    const id = profile.samples[i]!;
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let totalMs = 0;
  for (const [id, ms] of selfMs) {
    const frame = byId.get(id)!.callFrame;
    totalMs += ms;
    const name = frame.url ? `${frame.functionName || '(anonymous)'} ${shortFile(frame.url)}:${frame.lineNumber + 1}` : frame.functionName;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    const module = moduleOf(frame.url);
    byModule.set(module, (byModule.get(module) ?? 0) + ms);
  }
  return { totalMs, byFunction, byModule };
}

export function readProfile(file: string): ProfileTotals {
  return summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
}

function table(title: string, rows: Map<string, number>, top: number, per: number, before?: Map<string, number>): string {
  const sorted = [...rows.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  const fmt = (ms: number) => (per > 1 ? (ms / per).toFixed(3) : ms.toFixed(0)).padStart(8);
  const unit = per > 1 ? 'ms per unit' : 'ms';
  const lines = [`${title} (self time, ${unit}${before ? ', before → after' : ''})`];
  for (const [name, ms] of sorted) lines.push(`${before ? `${fmt(before.get(name) ?? 0)} →` : ''}${fmt(ms)}  ${name}`);
  return lines.join('\n');
}

function main(argv: string[]): void {
  const flags = new Map(argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=') as [string, string]));
  const files = argv.filter((a) => !a.startsWith('--'));
  if (files.length === 0 || files.length > 2) {
    process.stderr.write('usage: profileSummary [--top=25] [--per=<units>] [--by=module|function|both] <a.cpuprofile> [<b.cpuprofile>]\n');
    process.exit(2);
  }
  const top = Number(flags.get('top') ?? 25);
  const per = Number(flags.get('per') ?? 1);
  const by = flags.get('by') ?? 'both';
  const [first, second] = files.map(readProfile);
  const shown = second ?? first!;
  const before = second ? first : undefined;
  const total = (t: ProfileTotals) => (per > 1 ? `${(t.totalMs / per).toFixed(3)} ms per unit` : `${t.totalMs.toFixed(0)} ms`);
  console.log(`${files.join(' → ')}: sampled ${before ? `${total(before)} → ` : ''}${total(shown)}`);
  if (by !== 'function') console.log(table('by module', shown.byModule, top, per, before?.byModule));
  if (by !== 'module') console.log(table('by function', shown.byFunction, top, per, before?.byFunction));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main(process.argv.slice(2));
