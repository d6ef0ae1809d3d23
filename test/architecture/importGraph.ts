import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The import graph of `src` between its parts: each folder directly under `src` is one node (`controller`, `domain`,
 * …), and so is each file directly in `src` (`errors.ts`, `config.ts`, …). Type-only imports count: they tie the parts
 * together as much as value imports do. Generated code is left out.
 */
export interface ImportGraph {
  /** part → the parts it imports, each with the file-level imports that make the edge. */
  edges: Map<string, Map<string, string[]>>;
}

const SKIP = new Set(['generated', 'node_modules']);

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/**
 * The rollout kinds' settings rows (each kind's `settings.ts` and their list, `kinds/settings.ts`, ADR 0051) are a part
 * of their own: `config.ts` composes them, and they import only the rows' helpers (kindModules.test.ts checks), so they
 * are leaves beside `config.ts` and not the kinds' wiring, which reads the configuration.
 */
export const KIND_SETTINGS_PART = 'kinds/*/settings.ts';

export function partOf(srcDir: string, file: string): string {
  const relative = path.relative(srcDir, file).split(path.sep);
  if (relative[0] === 'kinds' && relative.at(-1) === 'settings.ts' && relative.length <= 3) return KIND_SETTINGS_PART;
  // The first segment names a folder under src, or a file directly in it.
  return relative[0]!;
}

export function importGraph(srcDir: string): ImportGraph {
  const edges = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(srcDir)) {
    const from = partOf(srcDir, file);
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), fileName.replace(/\.(m?js)$/, '.ts'));
      if (!target.startsWith(srcDir + path.sep)) continue;
      const to = partOf(srcDir, target);
      if (to === from) continue;
      const byTarget = edges.get(from) ?? new Map<string, string[]>();
      edges.set(from, byTarget);
      const via = byTarget.get(to) ?? [];
      via.push(`${path.relative(srcDir, file)} → ${path.relative(srcDir, target)}`);
      byTarget.set(to, via);
    }
  }
  return { edges };
}

/** Strongly connected components with more than one part: each is a cycle between parts (Tarjan). */
export function cycles(graph: ImportGraph): string[][] {
  const nodes = new Set<string>([...graph.edges.keys(), ...[...graph.edges.values()].flatMap((m) => [...m.keys()])]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** The edges inside one cycle, as `a → b (n imports): first import`, for a readable failure. */
export function describeCycle(graph: ImportGraph, component: string[]): string {
  const members = new Set(component);
  const lines: string[] = [];
  for (const a of component) {
    for (const [b, via] of graph.edges.get(a) ?? []) if (members.has(b)) lines.push(`  ${a} → ${b} (${via.length}): ${via[0]}`);
  }
  return `cycle between ${component.join(', ')}:\n${lines.join('\n')}`;
}
