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
