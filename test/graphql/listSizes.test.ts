import { getNamedType, isListType, isNonNullType, isObjectType, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { Domain } from '../../src/domain/Domain.js';
import { listSizesOf } from '../../src/graphql/listSizes.js';
import { checkQueryLimits } from '../../src/graphql/queryLimits.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

/**
 * Lists without `first` that count as UNKNOWN_LIST_SIZE (10) on purpose: each holds a handful by nature, or is bounded
 * elsewhere. Any other list must be in listSizesOf (issue 34, finding 10: every node of a cluster counted as 10).
 */
const HANDFUL: Record<string, string> = {
  'Query.clusterUpgradeDurations': 'one entry per ClusterVersion name ever upgraded',
  'AgentPool.conditions': "the IPPool's conditions (upstream sets four types)",
  'ClusterUpgradeObservation.components': "a virtual cluster's control-plane components (three)",
  'BumpPayload.plan': "a mutation's answer: mutations are limited per minute on their own, and the plan is the caller's own request",
  'Rollout.revertedOutsideRollplane': 'changes made outside rollplane that reverted one rollout (read capped at 100)',
};

const LIMITS = { maxQueryDepth: 12, maxAliases: 30, maxQueryCost: 1_000_000, maxQueryTokens: 2_000, maxBodyBytes: 262_144 };

function operationOf(query: string) {
  const document = parse(query);
  return { document, operation: document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode };
}

describe('list sizes in the cost estimate', () => {
  const schema = buildSchema(ROLLOUT_KIND_MODULES);

  it('bound every list without `first` (connection edges aside) by its current size, or name why it holds a handful', () => {
    const sizes = listSizesOf({ workQueues: () => [], nodeAgents: { listSets: () => [] } } as unknown as Domain, ROLLOUT_KIND_MODULES);
    const unbounded: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith('__')) continue;
      for (const field of Object.values(type.getFields())) {
        const inner = isNonNullType(field.type) ? field.type.ofType : field.type;
        if (!isListType(inner) || field.args.some((a) => a.name === 'first')) continue;
        if (field.name === 'edges' && getNamedType(field.type).name.endsWith('Edge')) continue;
        const coordinate = `${type.name}.${field.name}`;
        if (!(coordinate in sizes) && !(coordinate in HANDFUL)) unbounded.push(coordinate);
      }
    }
    expect(unbounded).toEqual([]);
  });

  it('counts every node a set runs on, read when the operation is estimated', () => {
    let nodes = 10;
    const domain = {
      workQueues: () => [],
      nodeAgents: { listSets: () => [{ nodes: Array.from({ length: nodes }) }] },
    } as unknown as Domain;
    const { document, operation } = operationOf('{ nodeAgentSets(first: 1) { edges { node { nodes { node image ready } } } } }');
    const cost = () => checkQueryLimits(schema, document, operation, {}, LIMITS, listSizesOf(domain, ROLLOUT_KIND_MODULES)).cost;
    const ten = cost();
    nodes = 5_000;
    // Three fields per node: 5,000 nodes add about 15,000 where 10 added 30.
    expect(cost() - ten).toBe(3 * (5_000 - 10));
  });
});
