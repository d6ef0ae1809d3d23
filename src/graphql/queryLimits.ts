import {
  getNamedType,
  getVariableValues,
  GraphQLError,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  Kind,
  valueFromAST,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { ErrorCode } from '../errors.js';

export interface QueryLimits {
  maxQueryDepth: number;
  maxAliases: number;
  maxQueryCost: number;
  maxQueryTokens: number;
  maxBodyBytes: number;
}

/**
 * Lists without a `first` argument that {@link ListSizes} does not bound are assumed to hold this many items when
 * estimating cost. Only lists that hold a handful by nature are left to it (a test keeps every other list bounded).
 */
export const UNKNOWN_LIST_SIZE = 10;

/**
 * How many items a list without `first` holds right now, by schema coordinate (`NodeAgentSet.nodes`): read when an
 * operation selects it, just before it runs, so the estimate is the answer's real size (issue 34, finding 10: every
 * node of a cluster counted as 10).
 */
export type ListSizes = Readonly<Record<string, () => number>>;

interface Tally {
  aliases: number;
  maxDepth: number;
}

function limitError(message: string, limit: string, value: number, max: number): GraphQLError {
  // Refused before execution: a 400, like any other invalid request (Apollo answers 500 for plugin errors otherwise).
  return new GraphQLError(message, { extensions: { code: ErrorCode.BadUserInput, limit, value, max, http: { status: 400 } } });
}

function unwrapList(type: GraphQLOutputType): boolean {
  const inner = isNonNullType(type) ? type.ofType : type;
  return isListType(inner);
}

/**
 * Depth, alias and cost limits for one operation, with its variables (so `first: $n` counts as what it is). Cost is
 * the number of fields a response can contain: each field costs 1 plus its children times the page size it asks for
 * (`first`, or the argument's default; plain lists count as 10). Runs after validation, so fragments are acyclic.
 */
export function checkQueryLimits(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  limits: QueryLimits,
  listSizes: ListSizes = {},
): { cost: number; error?: GraphQLError } {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  // The variables as execution will see them, with the defaults the operation declares (`query($n: Int = 500)`);
  // values that do not coerce are refused before execution anyway, so the ones sent are a fair estimate then.
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  const variableValues = coerced.coerced ?? variables;
  const tally: Tally = { aliases: 0, maxDepth: 0 };
  const root =
    operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return { cost: 0 };

  const costOf = (selectionSet: SelectionSetNode, parent: GraphQLOutputType, depth: number): number => {
    tally.maxDepth = Math.max(tally.maxDepth, depth);
    if (depth > limits.maxQueryDepth) return 0;
    const named = getNamedType(parent);
    const fields: Record<string, GraphQLField<unknown, unknown>> = isObjectType(named) || isInterfaceType(named) ? named.getFields() : {};
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.alias) tally.aliases++;
        const field = fields[selection.name.value];
        let childCost = 0;
        if (selection.selectionSet && field) childCost = costOf(selection.selectionSet, field.type, depth + 1);
        let multiplier = 1;
        const firstArg = field?.args.find((a) => a.name === 'first');
        if (firstArg) {
          const node = selection.arguments?.find((a) => a.name.value === 'first');
          // Counted as it is served: graphql-js passes the argument's default when `first` is omitted or names a
          // variable that was not sent, and the resolvers serve their default page size for an explicit null, inline
          // or through a variable (checkPageSize: `first ?? fallback`, the fallback being the schema's default).
          const value = (node ? valueFromAST(node.value, firstArg.type, variableValues) : undefined) ?? firstArg.defaultValue;
          multiplier = typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 1;
        } else if (field && unwrapList(field.type) && selection.name.value !== 'edges') {
          // A connection's `edges` hold the page its parent asked for with `first`, already counted there.
          const size = listSizes[`${named.name}.${selection.name.value}`];
          multiplier = size ? Math.max(1, size()) : UNKNOWN_LIST_SIZE;
        }
        cost += 1 + multiplier * childCost;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) as GraphQLOutputType | undefined) : parent;
        cost += costOf(selection.selectionSet, type ?? parent, depth);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment)
          cost += costOf(fragment.selectionSet, (schema.getType(fragment.typeCondition.name.value) as GraphQLOutputType | undefined) ?? parent, depth);
      }
      if (cost > limits.maxQueryCost * 10) return cost; // already hopeless; stop walking
    }
    return cost;
  };

  const cost = costOf(operation.selectionSet, root, 1);
  if (tally.maxDepth > limits.maxQueryDepth) {
    return {
      cost,
      error: limitError(`query is nested ${tally.maxDepth} levels deep; the limit is ${limits.maxQueryDepth}`, 'depth', tally.maxDepth, limits.maxQueryDepth),
    };
  }
  if (tally.aliases > limits.maxAliases) {
    return { cost, error: limitError(`query uses ${tally.aliases} aliases; the limit is ${limits.maxAliases}`, 'aliases', tally.aliases, limits.maxAliases) };
  }
  if (cost > limits.maxQueryCost) {
    return {
      cost,
      error: limitError(
        `query could return about ${cost} fields; the limit is ${limits.maxQueryCost} (ask for smaller pages or fewer fields)`,
        'cost',
        cost,
        limits.maxQueryCost,
      ),
    };
  }
  return { cost };
}
