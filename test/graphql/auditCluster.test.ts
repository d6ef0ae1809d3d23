import { buildSchema, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { clusterOfMutation } from '../../src/graphql/operationFields.js';

/**
 * AuditEntry.cluster for a bump (ADR 0060): its cluster selection names one cluster (and no label selector), or none
 * (`local`); several, or a label selection, or a mutation about no cluster, is null. Shapes the schema of this
 * branch cannot send yet (a bump's `memberClusters`) are checked on a schema that has them.
 */
const schema = buildSchema(`
  type Query { ok: Boolean }
  type BumpPayload { ok: Boolean }
  type Token { ok: Boolean }
  input Selection { names: [String!], labelSelector: String }
  input BumpInput { image: String!, memberClusters: Selection, dryRun: Boolean! = false }
  input TokenInput { name: String! }
  type Mutation {
    bumpThing(input: BumpInput!): BumpPayload!
    bumpOther(input: BumpInput!): BumpPayload!
    createToken(input: TokenInput!): Token!
    deregisterCluster(name: String!): Token!
  }
`);

function clusterOf(query: string, variables: Record<string, unknown> = {}): string | null {
  const document = parse(query);
  return clusterOfMutation(schema, document, getOperationAST(document)!, variables);
}

describe('the cluster a mutation addresses, for its audit entry', () => {
  it('reads a bump cluster selection', () => {
    expect(clusterOf('mutation { bumpThing(input: { image: "x" }) { ok } }')).toBe('local');
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { names: [] } }) { ok } }')).toBe('local');
    expect(clusterOf('mutation($s: Selection) { bumpThing(input: { image: "x", memberClusters: $s }) { ok } }', { s: { names: ['edge-1'] } })).toBe('edge-1');
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { names: ["edge-1", "edge-1"] } }) { ok } }')).toBe('edge-1');
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { names: ["edge-1", "edge-2"] } }) { ok } }')).toBeNull();
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { labelSelector: "tier=edge" } }) { ok } }')).toBeNull();
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { names: ["edge-1"], labelSelector: " " } }) { ok } }')).toBe('edge-1');
    expect(clusterOf('mutation { bumpThing(input: { image: "x", memberClusters: { names: ["Not A Name"] } }) { ok } }')).toBeNull();
  });

  it('needs every root field to address the same one cluster, through fragments too', () => {
    expect(
      clusterOf(
        'mutation { a: bumpThing(input: { image: "x", memberClusters: { names: ["e"] } }) { ok } ...F } fragment F on Mutation { bumpOther(input: { image: "y", memberClusters: { names: ["e"] } }) { ok } }',
      ),
    ).toBe('e');
    expect(clusterOf('mutation { ...F } fragment F on Mutation { deregisterCluster(name: "e") { ok } bumpThing(input: { image: "x" }) { ok } }')).toBeNull();
    expect(clusterOf('mutation { deregisterCluster(name: "e") { ok } createToken(input: { name: "t" }) { ok } }')).toBeNull();
    expect(clusterOf('mutation { createToken(input: { name: "t" }) { ok } }')).toBeNull();
  });

  it('is null when the arguments do not coerce, and for queries', () => {
    expect(clusterOf('mutation($n: String!) { deregisterCluster(name: $n) { ok } }', { n: 3 })).toBeNull();
    expect(clusterOf('mutation($n: String!) { deregisterCluster(name: $n) { ok } }', { n: 'edge-9' })).toBe('edge-9');
    expect(clusterOf('query { ok }')).toBeNull();
  });
});
