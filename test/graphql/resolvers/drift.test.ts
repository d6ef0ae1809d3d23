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

type DriftArgs = { kind?: RolloutKind | null; first?: number; after?: string | null; cluster?: string | null };

async function driftNodes(kinds: KindApi[], args: DriftArgs, domain = {} as Domain) {
  const resolve = (driftResolvers(kinds).Query as { drift: (...a: unknown[]) => Promise<{ edges: { node: DriftItem & { cluster: string } }[] }> }).drift;
  const connection = await resolve({}, args, { domain } as GraphQLContext, {});
  return connection.edges.map((edge) => edge.node);
}

async function drift(kinds: KindApi[], args: DriftArgs) {
  return (await driftNodes(kinds, args)).map((node) => `${node.kind}/${node.name}`);
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

  it("reads one member cluster's ports when asked (attack 15, F6); unknown is BAD_USER_INPUT, unreadable UNAVAILABLE", async () => {
    const edgePorts = { marker: 'edge-1' };
    const asked: unknown[] = [];
    const kinds: KindApi[] = [
      {
        ...kindApi('AGENT_POOL', []),
        drift: async (ports) => {
          asked.push(ports);
          return (ports as unknown) === edgePorts ? [item('AGENT_POOL', 'net-1')] : [];
        },
      },
    ];
    const domain = {
      clusterPorts: {
        registered: async () => [
          { name: 'local', labels: {} },
          { name: 'edge-1', labels: {} },
          { name: 'edge-2', labels: {} },
        ],
        portsOf: (cluster: string) =>
          cluster === 'edge-1' ? { ports: edgePorts } : cluster === 'edge-2' ? { unavailable: 'member cluster edge-2 is UNREACHABLE' } : { ports: {} },
      },
    } as unknown as Domain;
    const nodes = await driftNodes(kinds, { cluster: 'edge-1', first: 10 }, domain);
    expect(nodes.map((n) => `${n.cluster}:${n.kind}/${n.name}`)).toEqual(['edge-1:AGENT_POOL/net-1']);
    expect(asked).toEqual([edgePorts]);
    expect((await driftNodes(kinds, { first: 10 }, domain)).length).toBe(0);
    await expect(driftNodes(kinds, { cluster: 'nope', first: 10 }, domain)).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: expect.stringContaining('no member cluster named "nope" is registered'),
    });
    await expect(driftNodes(kinds, { cluster: 'edge-2', first: 10 }, domain)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringContaining('edge-2 is UNREACHABLE'),
    });
  });

  it('has every registered kind answer none where its controllers are not set up', async () => {
    for (const module of ROLLOUT_KIND_MODULES) expect(await module.drift({} as Domain), module.kind).toEqual([]);
  });
});
