import { type FragmentDefinitionNode, Kind, type OperationDefinitionNode, parse, print, type SelectionNode, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { fleetQuery, formatFleet } from '../../src/cli/fleet.js';
import { RolloutSummaryFragmentDoc } from '../../src/cli/generated/graphql.js';
import { checkQueryLimits } from '../../src/graphql/queryLimits.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { KIND_FLEET_PARTS } from '../../src/kinds/cli.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

/** The Fleet query as one document wrote it before the kinds contributed their parts (ADR 0051). */
const ONE_DOCUMENT = `query Fleet {
  agentPools(first: 1) { totalCount }
  driftedPools: agentPools(filter: { drifted: true }, first: 1) { totalCount }
  virtualClusters(first: 100) { totalCount edges { node { upToDate upgrading } } }
  clusterVersions(first: 20) { totalCount edges { node { name specVersion apiServerImage } } }
  nodeAgentSets(first: 20) { totalCount edges { node { namespace name desiredImage drivenBy nodes { upToDate ready } } } }
  drift(first: 1) { totalCount }
  active: rollouts(filter: { states: [PENDING, PROGRESSING, PAUSED] }, first: 10) { totalCount edges { node { ...RolloutSummary } } }
}
${RolloutSummaryFragmentDoc.toString()}`;

const LIMITS = { maxQueryDepth: 12, maxAliases: 30, maxQueryCost: 1_000_000, maxQueryTokens: 2_000, maxBodyBytes: 262_144 };

/** The operation's root selections with its fragments on Query written in place (what the server executes, in order). */
function rootSelections(query: string): string {
  const document = parse(query);
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const expand = (selections: readonly SelectionNode[]): SelectionNode[] =>
    selections.flatMap((s) =>
      s.kind === Kind.FRAGMENT_SPREAD && fragments.get(s.name.value)?.typeCondition.name.value === 'Query'
        ? expand(fragments.get(s.name.value)!.selectionSet.selections)
        : [s],
    );
  return print({ ...operation.selectionSet, selections: expand(operation.selectionSet.selections) });
}

function costOf(query: string): number {
  const schema = buildSchema(ROLLOUT_KIND_MODULES);
  const document = parse(query);
  expect(validate(schema, document)).toEqual([]);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  return checkQueryLimits(schema, document, operation, {}, LIMITS).cost;
}

describe('rollplane fleet, from the kinds’ parts', () => {
  const query = fleetQuery(KIND_FLEET_PARTS).toString();

  it('asks what the one document asked, field for field in the same order (so -o json prints the same), at the same cost', () => {
    expect(rootSelections(query)).toBe(rootSelections(ONE_DOCUMENT));
    expect(costOf(query)).toBe(costOf(ONE_DOCUMENT));
  });

  it('sees a part left out or moved (a broken comparison would pass everything)', () => {
    const [pools, clusters, agents] = KIND_FLEET_PARTS;
    expect(rootSelections(fleetQuery([clusters!, pools!, agents!]).toString())).not.toBe(rootSelections(ONE_DOCUMENT));
    expect(costOf(fleetQuery([pools!, clusters!]).toString())).toBeLessThan(costOf(ONE_DOCUMENT));
  });

  const summary = (id: string, kind: string, state: string, percent: number, fromVersion: string | null, toVersion: string) =>
    ({ id, kind, state, fromVersion, toVersion, progress: { percent } }) as never;
  const answer = {
    agentPools: { totalCount: 12 },
    driftedPools: { totalCount: 2 },
    virtualClusters: {
      totalCount: 3,
      edges: [{ node: { upToDate: true, upgrading: false } }, { node: { upToDate: false, upgrading: true } }, { node: { upToDate: false, upgrading: false } }],
    },
    clusterVersions: { totalCount: 2, edges: [] },
    nodeAgentSets: {
      totalCount: 2,
      edges: [
        {
          node: {
            namespace: 'kube-system',
            name: 'caa',
            desiredImage: 'quay.io/caa:v2',
            drivenBy: 'r-1',
            nodes: [
              { upToDate: true, ready: true },
              { upToDate: false, ready: false },
            ],
          },
        },
        { node: { namespace: 'ops', name: 'agent', desiredImage: 'agent:v1', drivenBy: null, nodes: [{ upToDate: true, ready: true }] } },
      ],
    },
    drift: { totalCount: 1 },
    active: { totalCount: 1, edges: [{ node: summary('r-1', 'NODE_AGENT', 'PROGRESSING', 50, null, 'quay.io/caa:v2') }] },
  };

  // The texts below are what src/cli/format.ts's one formatFleet printed for these answers (main ded91b3).
  it('prints the summary byte for byte as before: the kinds’ rows in the list’s order, the sets’ table, the active rollouts', () => {
    expect(formatFleet(answer, KIND_FLEET_PARTS)).toBe(
      'KIND              TARGETS  DRIFTED  NOTE\nagent pools       12       2\nvirtual clusters  3        2        1 upgrading; 2 cluster versions\nnode agents       3        1        2 DaemonSets; 1 not ready\ndrift: 1 target (rollplane drift lists them)\n\nNODE-AGENT SET   IMAGE           NODES           ROLLOUT\nkube-system/caa  quay.io/caa:v2  1/2 up to date  r-1\nops/agent        agent:v1        1/1 up to date  -\n\nACTIVE ROLLOUT  KIND        STATE        DONE  VERSION\nr-1             NODE_AGENT  PROGRESSING  50%   (unknown) → quay.io/caa:v2',
    );
  });

  it('leaves out a kind’s own table when it has nothing to show', () => {
    const quiet = { ...answer, nodeAgentSets: { totalCount: 0, edges: [] }, drift: { totalCount: 0 }, active: { totalCount: 0, edges: [] } };
    expect(formatFleet(quiet, KIND_FLEET_PARTS)).toBe(
      'KIND              TARGETS  DRIFTED  NOTE\nagent pools       12       2\nvirtual clusters  3        2        1 upgrading; 2 cluster versions\nnode agents       0        0        0 DaemonSets; 0 not ready\ndrift: 0 targets (rollplane drift lists them)\n\nno active rollouts',
    );
  });
});
