import { describe, expect, it } from 'vitest';
import type { Domain } from '../../../src/domain/Domain.js';
import type { DriftItem } from '../../../src/domain/drift.js';
import type { RolloutKind } from '../../../src/domain/events.js';
import type { GraphQLContext } from '../../../src/graphql/context.js';
import type { KindApi } from '../../../src/graphql/kindApi.js';
import { driftResolvers } from '../../../src/graphql/resolvers/drift.js';
import { ROLLOUT_KIND_MODULES } from '../../../src/kinds/index.js';

const item = (kind: RolloutKind, name: string): DriftItem => ({
  kind,
  namespace: 'ns',
  name,
  desiredVersion: 'v2',
  runningVersion: 'v1',
  since: null,
});

/** A kind whose drift port answers `items`, or fails the test when it is asked at all. */
const kindApi = (kind: RolloutKind, items: DriftItem[] | 'must not be asked'): KindApi => ({
  kind,
  resolvers: {},
  drift: async () => {
    if (items === 'must not be asked') throw new Error(`${kind}'s drift was read for another kind's query`);
    return items;
  },
  clusterFigures: async () => undefined,
});

async function drift(kinds: KindApi[], args: { kind?: RolloutKind | null; first?: number; after?: string | null }) {
  const resolve = (driftResolvers(kinds).Query as { drift: (...a: unknown[]) => Promise<{ edges: { node: DriftItem }[] }> }).drift;
  const connection = await resolve({}, args, { domain: {} as Domain } as GraphQLContext, {});
  return connection.edges.map((edge) => `${edge.node.kind}/${edge.node.name}`);
}

describe('drift: a port each kind contributes, composed by one resolver (ADR 0045)', () => {
  it('pages every kind’s drifted targets as one list ordered by kind, namespace, name', async () => {
    const kinds = [kindApi('VIRTUAL_CLUSTER', [item('VIRTUAL_CLUSTER', 'b'), item('VIRTUAL_CLUSTER', 'a')]), kindApi('AGENT_POOL', [item('AGENT_POOL', 'z')])];
    expect(await drift(kinds, { first: 10 })).toEqual(['AGENT_POOL/z', 'VIRTUAL_CLUSTER/a', 'VIRTUAL_CLUSTER/b']);
    expect(await drift(kinds, { first: 2 })).toEqual(['AGENT_POOL/z', 'VIRTUAL_CLUSTER/a']);
  });

  it('asks only the named kind when the query names one', async () => {
    const kinds = [kindApi('AGENT_POOL', 'must not be asked'), kindApi('NODE_AGENT', [item('NODE_AGENT', 'node-1')])];
    expect(await drift(kinds, { kind: 'NODE_AGENT', first: 10 })).toEqual(['NODE_AGENT/node-1']);
  });

  it('has every registered kind answer none where its controllers are not set up', async () => {
    for (const module of ROLLOUT_KIND_MODULES) expect(await module.drift({} as Domain), module.kind).toEqual([]);
  });
});
