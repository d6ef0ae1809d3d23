import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';

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
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const fields: string[] = [];
  const expanded = new Set<string>();
  const walk = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      switch (selection.kind) {
        case Kind.FIELD:
          if (!META_FIELDS.has(selection.name.value) && !fields.includes(selection.name.value)) fields.push(selection.name.value);
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
  return fields;
}
