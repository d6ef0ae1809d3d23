import { Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

/**
 * Fields of one response name a selection set may hold, counting those its inline fragments and the fragments it
 * spreads (transitively) bring into it. graphql-js's validation compares every pair of same-named fields of a set to
 * see that they merge, so its work grows with the square of this count: `{ serverInfo { __typename } }` 400 times, well
 * within the token cap, took 100–180 ms to validate for an estimated cost of ~800 (issue 34, attack 12, F2). Real
 * documents repeat a response name a handful of times at most (the same field in a fragment and beside it).
 */
export const MAX_REPEATED_SELECTIONS = 20;

/**
 * The first response name a selection set of `document` repeats more than MAX_REPEATED_SELECTIONS times, and how often;
 * undefined when there is none. Linear in the document (each set walks each fragment it reaches once), so it runs
 * after parsing and before validation.
 */
export function repeatedSelection(document: DocumentNode): { name: string; count: number } | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const sets: SelectionSetNode[] = [];
  const queued = new Set<SelectionSetNode>();
  const queue = (set: SelectionSetNode) => {
    if (queued.has(set)) return;
    queued.add(set);
    sets.push(set);
  };
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) queue(definition.selectionSet);
  }
  for (let i = 0; i < sets.length; i++) {
    const counts = new Map<string, number>();
    const reached = new Set<string>();
    const pending: SelectionSetNode[] = [sets[i]!];
    while (pending.length > 0) {
      for (const selection of pending.pop()!.selections) {
        if (selection.kind === Kind.FIELD) {
          const name = selection.alias?.value ?? selection.name.value;
          const count = (counts.get(name) ?? 0) + 1;
          if (count > MAX_REPEATED_SELECTIONS) return { name, count };
          counts.set(name, count);
          if (selection.selectionSet) queue(selection.selectionSet);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          pending.push(selection.selectionSet);
        } else if (!reached.has(selection.name.value)) {
          reached.add(selection.name.value);
          const fragment = fragments.get(selection.name.value);
          if (fragment) pending.push(fragment.selectionSet);
        }
      }
    }
  }
  return undefined;
}

export function repeatedSelectionMessage({ name, count }: { name: string; count: number }): string {
  return `"${name}" is selected ${count} times in one selection set (with its fragments); at most ${MAX_REPEATED_SELECTIONS}: alias the fields that differ, or select the field once`;
}
