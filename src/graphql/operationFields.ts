import {
  getArgumentValues,
  getVariableValues,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  getNamedType,
  type GraphQLField,
  type GraphQLSchema,
  isInputObjectType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { isDryRun } from '../auth/policy.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { isDns1123Label } from '../util/dnsNames.js';

/** Introspection fields: any caller may use them; they never reach a resolver of ours. */
const META_FIELDS = new Set(['__typename', '__schema', '__type']);

/**
 * The root fields an operation can execute, after its fragments are expanded: fields written directly, inside inline
 * fragments (`... on Mutation { … }`) and inside fragment spreads (`...M`), however deeply nested. Names, not aliases;
 * each once, in first-seen order; introspection fields left out. `@skip`/`@include` are ignored on purpose: a field
 * that may not run is still checked, so no variable can switch a field past the check.
 *
 * Authorization, the audit log and the metrics all read the operation through this one function, so that no request
 * shape is seen differently by one of them.
 */
export function rootFieldsOf(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fields: string[] = [];
  for (const node of rootFieldNodesOf(document, operation)) if (!fields.includes(node.name.value)) fields.push(node.name.value);
  return fields;
}

/** Every root field node an operation can execute (as rootFieldsOf walks them), each occurrence, aliases included. */
export function rootFieldNodesOf(document: DocumentNode, operation: OperationDefinitionNode): FieldNode[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const nodes: FieldNode[] = [];
  const expanded = new Set<string>();
  const walk = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      switch (selection.kind) {
        case Kind.FIELD:
          if (!META_FIELDS.has(selection.name.value)) nodes.push(selection);
          break;
        case Kind.INLINE_FRAGMENT:
          walk(selection.selectionSet);
          break;
        case Kind.FRAGMENT_SPREAD: {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          // Validation rejects undefined and cyclic fragments before this runs; the guard keeps a bad document finite.
          if (fragment && !expanded.has(name)) {
            expanded.add(name);
            walk(fragment.selectionSet);
          }
          break;
        }
      }
    }
  };
  walk(operation.selectionSet);
  return nodes;
}

/**
 * Whether a mutation offers dry runs: its `input` argument's type has a `dryRun` field (schema.graphql: each kind's
 * bump input). Such a mutation changes nothing when asked for one, which is why a viewer may send it then.
 */
export function offersDryRun<TContext>(field: GraphQLField<unknown, TContext>): boolean {
  const input = field.args.find((arg) => arg.name === 'input');
  const type = input && getNamedType(input.type);
  return isInputObjectType(type) && 'dryRun' in type.getFields();
}

/**
 * The mutation's fields that offer dry runs (offersDryRun) and run only as dry runs: every occurrence asks `input: { dryRun: true }` (with the
 * variables as sent). A viewer may send those (auth/policy.ts); one occurrence that does not, or arguments that do not
 * coerce, keeps the field's usual role.
 */
export function dryRunOnlyFields(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): Set<string> {
  const mutation = schema.getMutationType();
  if (operation.operation !== 'mutation' || !mutation) return new Set();
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}).coerced;
  const dry = new Set<string>();
  const wet = new Set<string>();
  for (const node of rootFieldNodesOf(document, operation)) {
    const name = node.name.value;
    const definition = mutation.getFields()[name];
    let args: Record<string, unknown> | undefined;
    try {
      args = definition && coerced ? getArgumentValues(definition, node, coerced) : undefined;
    } catch {
      args = undefined;
    }
    if (definition && offersDryRun(definition) && isDryRun(args)) dry.add(name);
    else wet.add(name);
  }
  for (const name of wet) dry.delete(name);
  return dry;
}

/** What a bump's payload is (schema.graphql): a root field that returns it launches a rollout from its `input`. */
const BUMP_PAYLOAD = 'BumpPayload';

/**
 * The one member cluster a mutation addresses, for its audit entry (AuditEntry.cluster, ADR 0054/0060), read from its
 * arguments as sent: `registerCluster`'s `input.name`, `updateClusterLabels`' and `deregisterCluster`'s `name`, and a
 * bump's cluster selection (`input.memberClusters`) when it names one cluster and no label selector, or none (a bump
 * that names no cluster is `local`'s). Every root field that runs must address the same cluster, and it must be a
 * valid cluster name; otherwise (no cluster: tokens, settings; several; a label selection; arguments that do not
 * coerce) null: an entry never claims a cluster the operation did not name. Never a credential: a name only.
 */
export function clusterOfMutation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | null | undefined,
): string | null {
  const mutation = schema.getMutationType();
  if (operation.operation !== 'mutation' || !mutation) return null;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}).coerced;
  if (!coerced) return null;
  const clusters = new Set<string | null>();
  for (const node of rootFieldNodesOf(document, operation)) {
    const definition = mutation.getFields()[node.name.value];
    if (!definition) return null;
    try {
      clusters.add(clusterOfField(definition, getArgumentValues(definition, node, coerced)));
    } catch {
      return null;
    }
  }
  const [only] = clusters;
  return clusters.size === 1 && typeof only === 'string' && isDns1123Label(only).length === 0 ? only : null;
}

function clusterOfField<TContext>(field: GraphQLField<unknown, TContext>, args: Record<string, unknown>): string | null {
  switch (field.name) {
    case 'registerCluster':
      return textOf((args.input as { name?: unknown } | undefined)?.name);
    case 'updateClusterLabels':
    case 'deregisterCluster':
      return textOf(args.name);
  }
  if (getNamedType(field.type).name !== BUMP_PAYLOAD) return null;
  const selection = (args.input as { memberClusters?: { names?: unknown; labelSelector?: unknown } | null } | undefined)?.memberClusters;
  const names = Array.isArray(selection?.names) ? [...new Set(selection.names)] : [];
  const selector = typeof selection?.labelSelector === 'string' ? selection.labelSelector.trim() : '';
  if (selector !== '') return null;
  if (names.length === 0) return LOCAL_CLUSTER;
  return names.length === 1 ? textOf(names[0]) : null;
}

function textOf(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}
