import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, describeCycle, type ImportGraph, importGraph, KIND_SETTINGS_PART } from './importGraph.js';
import { KIND_IMPORT_DEBTS } from './kindBoundaries.js';

const SRC = path.resolve(import.meta.dirname, '../../src');
const graph = importGraph(SRC);

/**
 * Imports that close a cycle today and are known debts, each with the work that removes it. The list only shrinks: a
 * test fails when an entry no longer exists (delete it then), and any import not listed here that closes a cycle fails.
 * Empty since issue 15 put persistence behind ports owned by the domain (domain/historyPort.ts, domain/AuditStore.ts,
 * auth/TokenStore.ts): src/store depends on the domain and auth, never the other way.
 */
const KNOWN_CYCLE_DEBTS: string[] = [];

function withoutDebts(g: ImportGraph): ImportGraph {
  const edges = new Map<string, Map<string, string[]>>();
  for (const [from, byTarget] of g.edges) {
    const kept = new Map<string, string[]>();
    for (const [to, via] of byTarget) {
      const rest = via.filter((v) => !KNOWN_CYCLE_DEBTS.includes(v));
      if (rest.length > 0) kept.set(to, rest);
    }
    edges.set(from, kept);
  }
  return { edges };
}

/**
 * What the generic controller runtime may import besides itself and npm packages: the Kubernetes client adapter
 * (error translation), shared leaf primitives (clocks, token buckets) and the error hierarchy. Nothing that knows
 * rollplane (configuration, the domain, the store, the rollout kinds, the API).
 */
const CONTROLLER_MAY_IMPORT = new Set(['kube', 'util', 'errors.ts']);

/**
 * Who may import src/kinds (ADR 0045), and what: the composition root (src/start) the server's list of kinds, which it
 * hands to the rest; the CLI's entry point (src/rollplane.ts) the CLI's list (its bump subcommands); the web UI's entry
 * point (src/webUi.ts) the UI's list (the kinds' views, ADR 0052). The kinds' settings rows are a part of their own
 * (KIND_SETTINGS_PART), which only config.ts imports.
 */
const mayImportKinds = (edge: string) =>
  /^start\/[^ ]+ → kinds\/index\.ts$/.test(edge) || edge === 'rollplane.ts → kinds/cli.ts' || edge === 'webUi.ts → kinds/ui.ts';

describe('the import graph of src', () => {
  it('has no cycle between folders (or the files directly in src) but the known debts', () => {
    const checked = withoutDebts(graph);
    const found = cycles(checked).map((c) => describeCycle(checked, c));
    expect(found, found.join('\n\n')).toEqual([]);
  });

  it('lists only debts that still exist (remove an entry once its import is gone)', () => {
    const all = new Set([...graph.edges.values()].flatMap((m) => [...m.values()].flat()));
    expect(KNOWN_CYCLE_DEBTS.filter((d) => !all.has(d))).toEqual([]);
  });

  it('keeps the generic controller runtime free of rollplane', () => {
    const wrong = [...(graph.edges.get('controller') ?? [])].filter(([to]) => !CONTROLLER_MAY_IMPORT.has(to)).flatMap(([, via]) => via);
    expect(wrong).toEqual([]);
  });

  it('keeps GraphQL and the controllers apart (only a kind’s module and the composition root wire them)', () => {
    expect([...(graph.edges.get('graphql')?.get('controllers') ?? []), ...(graph.edges.get('controllers')?.get('graphql') ?? [])]).toEqual([]);
  });

  it('lets only the composition roots import the rollout kinds, through their lists (generic code reaches a kind through interfaces it owns)', () => {
    const importers = [...graph.edges].flatMap(([, to]) => to.get('kinds') ?? []).filter((edge) => !mayImportKinds(edge));
    expect(importers.filter((i) => !KIND_IMPORT_DEBTS.includes(i)).sort()).toEqual([]);
  });

  it('lets only the configuration import the kinds’ settings rows, through their list (and each kind its own)', () => {
    const importers = [...graph.edges]
      .filter(([from]) => from !== 'kinds')
      .flatMap(([, to]) => to.get(KIND_SETTINGS_PART) ?? [])
      .filter((edge) => edge !== 'config.ts → kinds/settings.ts');
    expect(importers).toEqual([]);
    expect(graph.edges.get('config.ts')?.get(KIND_SETTINGS_PART)).toEqual(['config.ts → kinds/settings.ts']);
  });

  it('sees the imports it checks (a broken walker would pass everything)', () => {
    expect(graph.edges.get('domain')?.has('errors.ts')).toBe(true);
    expect(
      cycles({
        edges: new Map([
          ['a', new Map([['b', ['a→b']]])],
          ['b', new Map([['a', ['b→a']]])],
        ]),
      }),
    ).toEqual([['a', 'b']]);
  });
});
