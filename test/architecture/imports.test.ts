import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, describeCycle, importGraph } from './importGraph.js';

const SRC = path.resolve(import.meta.dirname, '../../src');
const graph = importGraph(SRC);

/**
 * What the generic controller runtime may import besides itself and npm packages: the Kubernetes client adapter
 * (error translation), shared leaf primitives (clocks, token buckets) and the error hierarchy. Nothing that knows
 * rollplane (configuration, the domain, the store, the rollout kinds, the API).
 */
const CONTROLLER_MAY_IMPORT = new Set(['kube', 'util', 'errors.ts']);

describe('the import graph of src', () => {
  it('has no cycle between folders (or the files directly in src)', () => {
    const found = cycles(graph).map((c) => describeCycle(graph, c));
    expect(found, found.join('\n\n')).toEqual([]);
  });

  it('keeps the generic controller runtime free of rollplane', () => {
    const wrong = [...(graph.edges.get('controller') ?? [])].filter(([to]) => !CONTROLLER_MAY_IMPORT.has(to)).flatMap(([, via]) => via);
    expect(wrong).toEqual([]);
  });

  it('keeps GraphQL and the rollout kinds apart (only the composition root wires them)', () => {
    expect([...(graph.edges.get('graphql')?.get('controllers') ?? []), ...(graph.edges.get('controllers')?.get('graphql') ?? [])]).toEqual([]);
  });

  it('sees the imports it checks (a broken walker would pass everything)', () => {
    expect(graph.edges.get('domain')?.has('errors.ts')).toBe(true);
    expect(cycles({ edges: new Map([['a', new Map([['b', ['a→b']]])], ['b', new Map([['a', ['b→a']]])]]) })).toEqual([['a', 'b']]);
  });
});
