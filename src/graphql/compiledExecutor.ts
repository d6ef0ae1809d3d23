import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import {
  type DocumentNode,
  execute,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type GraphQLSchema,
  Kind,
  type SelectionSetNode,
  visit,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { CachedAnswer, ResponseCache } from './responseCache.js';
import { CONFIG_DEFAULTS } from '../config.js';

/**
 * Query documents that clients send again and again run as compiled JavaScript (graphql-jit); everything else runs
 * in graphql-js's interpreter, as before. docs/adr/0025-compiled-execution.md has the reasons and the figures.
 *
 * Why compile: on a page of 20 rollouts (about 580 resolved fields) graphql-js's per-field work — argument coercion,
 * field collection, promise bookkeeping for every object — was 30–40% of the server's CPU (issue 17 profiles). A
 * compiled query plans that once per document and then runs straight-line code per row.
 *
 * What is compiled, and why so little else (each rule closes a difference or an abuse a black-box attack found):
 * - Only queries. Mutations write and are rare next to reads, and graphql-jit does not apply the defaults of
 *   input-object fields (`dryRun: Boolean! = false`), which only mutation inputs have.
 * - Only documents sent often: by default a document is compiled on its third run (ROLLPLANE_GRAPHQL_COMPILE_AFTER).
 *   Compiling costs far more than validating, so one-off documents (a playground user's, an attacker's stream of
 *   distinct ones) must never pay for it.
 * - Only small documents: at most {@link MAX_COMPILED_FIELDS} fields *with every fragment spread expanded*. Compile
 *   time grows with the expanded selection: a 2.5 KB document of chained fragments within every query limit expands
 *   to thousands of fields and took 1–2 s to compile, blocking the event loop.
 * - No `@skip`/`@include`: graphql-jit keeps a skipped duplicate field's position, so keys came out in another order
 *   (and the response's ETag changed on the third run).
 * - No variable with a default value: graphql-jit passed an explicit null for a nullable variable with a default into
 *   a non-null list position (`states: [PAUSED, $s]`), where graphql-js refuses the argument; and a non-null variable
 *   with a default, left out, made every compiled run report an error (and run twice). The UI and the CLI declare no
 *   defaults.
 * - Errors are graphql-js's: a compiled run that reports any error (variables refused, a resolver's error, a null
 *   in a non-null field) is run again by graphql-js, whose answer is sent. graphql-jit reports every error under a
 *   nulled parent where graphql-js reports the first, words variable errors differently, and builds errors Apollo
 *   cannot map. Only queries are compiled, so running one twice reads twice and writes nothing.
 *
 * Apollo Server takes a custom executor only through its gateway interface; this "gateway" serves the one local schema
 * and never changes it. Everything before execution (parsing, validation, the guard and the cost limits in
 * didResolveOperation, the audit in willSendResponse) is Apollo's pipeline as before. Subscriptions are graphql-ws's
 * and keep graphql-js (src/graphql/fanOut.ts): each event runs once per distinct document there already.
 */

/** Runs of a document in the interpreter before it is compiled: ROLLPLANE_GRAPHQL_COMPILE_AFTER's default (src/config.ts). */
export const DEFAULT_COMPILE_AFTER = CONFIG_DEFAULTS.graphql.compileAfter ?? 0;

/** Documents whose operations select more fields than this, fragment spreads expanded, are never compiled. */
export const MAX_COMPILED_FIELDS = 250;

/**
 * Which executor answered: `compiled`; `interpreted` (graphql-js); `fallback` (a compiled run reported an error, and
 * graphql-js ran the query again to answer); `cached` (nothing ran: the response cache had the answer, ADR 0026).
 */
export type Executor = 'compiled' | 'interpreted' | 'fallback' | 'cached';

/** What this module remembers of one parsed document. */
interface DocumentState {
  runs: number;
  compilable: boolean;
  /** Compiled plans by operation name ('' for the only operation). */
  plans: Map<string, CompiledQuery>;
}

/**
 * The most fields any operation of `document` selects, fragment spreads expanded (each fragment's own count is
 * computed once). Stops counting past `limit`: only "at most `limit`" matters, and expansion can be exponential.
 */
export function expandedFieldCount(document: DocumentNode, limit: number): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const perFragment = new Map<string, number>();
  const inProgress = new Set<string>(); // validation refuses fragment cycles; this keeps a cycle from recursing forever all the same
  const countOf = (selectionSet: SelectionSetNode): number => {
    let count = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) count += 1 + (selection.selectionSet ? countOf(selection.selectionSet) : 0);
      else if (selection.kind === Kind.INLINE_FRAGMENT) count += countOf(selection.selectionSet);
      else {
        const name = selection.name.value;
        let spread = perFragment.get(name);
        if (spread === undefined) {
          const fragment = fragments.get(name);
          if (!fragment || inProgress.has(name)) spread = 0;
          else {
            inProgress.add(name);
            spread = countOf(fragment.selectionSet);
            inProgress.delete(name);
          }
          perFragment.set(name, spread);
        }
        count += spread;
      }
      if (count > limit) return count;
    }
    return count;
  };
  let most = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) most = Math.max(most, countOf(definition.selectionSet));
    if (most > limit) break;
  }
  return most;
}

/** `@skip`/`@include` anywhere, or a variable with a default value: what graphql-jit answers differently. */
function usesWhatJitAnswersDifferently(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') found = true;
    },
    VariableDefinition(node) {
      if (node.defaultValue) found = true;
    },
  });
  return found;
}

/** Whether `document` may ever be compiled (the rules in this module's comment that depend on the document alone). */
function compilable(document: DocumentNode): boolean {
  return !usesWhatJitAnswersDifferently(document) && expandedFieldCount(document, MAX_COMPILED_FIELDS) <= MAX_COMPILED_FIELDS;
}

/**
 * The gateway that hands Apollo the executor for `schema`. `onExecute` is told which executor answered each
 * operation (the `rollplane_graphql_executions_total` metric).
 */
export function compiledExecutionGateway(
  schema: GraphQLSchema,
  options: {
    /** Interpreted runs of a query document before it is compiled; null: never compiled (graphql-js only). */
    compileAfter: number | null;
    onExecute?: (executor: Executor) => void;
    /** Answers kept until what they were read from changes (ADR 0026); absent: every query runs. */
    responseCache?: ResponseCache;
    /** What, beyond the document and its variables, can change an answer: the caller's role. */
    callerOf?: (context: unknown) => string;
  },
): GatewayInterface {
  const { compileAfter } = options;
  const onExecute = options.onExecute ?? (() => {});
  // Apollo's document store hands back the same DocumentNode for the same query text, so state keyed on it lives as
  // long as Apollo keeps the parsed document (its LRU bounds both).
  const documents = new WeakMap<DocumentNode, DocumentState>();

  function planFor(document: DocumentNode, operationName: string | undefined): CompiledQuery | undefined {
    let state = documents.get(document);
    if (!state) {
      state = { runs: 0, compilable: compileAfter !== null && compilable(document), plans: new Map() };
      documents.set(document, state);
    }
    state.runs += 1;
    if (!state.compilable || state.runs <= (compileAfter ?? 0)) return undefined;
    const key = operationName ?? '';
    const known = state.plans.get(key);
    if (known) return known;
    const compiled = compileQuery(schema, document, operationName);
    if (!isCompiledQuery(compiled)) {
      // Apollo has validated the document and chosen the operation, so graphql-jit refusing it is a gap in
      // graphql-jit: interpret this document from now on.
      state.compilable = false;
      return undefined;
    }
    state.plans.set(key, compiled);
    return compiled;
  }

  const { responseCache: cache, callerOf = () => '' } = options;

  const executor: GatewayExecutor = async (requestContext) => {
    const { document, operation, context } = requestContext;
    // The client's operationName, not the chosen operation's name (null when none was chosen): graphql-js must see an
    // unknown name to answer it as an unknown operation, as Apollo expects.
    const operationName = requestContext.request.operationName ?? undefined;
    const variables = requestContext.request.variables ?? {};
    const source = cache && operation ? cache.sourceOf(document, operation) : undefined;
    if (!cache || !source) return run(document, operation, context, operationName, variables);
    // Read before the query's own reads: an answer is kept under the generation it was read entirely after.
    const generation = cache.generationNow(source);
    const key = generation === null ? undefined : cache.keyOf(requestContext.queryHash, operationName, callerOf(context), variables);
    if (generation === null || key === undefined) return run(document, operation, context, operationName, variables);
    const kept = cache.lookup(key, generation);
    if (kept) {
      onExecute('cached');
      return kept;
    }
    const inProgress = cache.readInProgress(key, generation);
    if (inProgress) {
      const shared = await inProgress;
      if (shared) {
        onExecute('cached');
        return shared;
      }
    }
    const finish = cache.startRead(key, generation);
    let answer: CachedAnswer | undefined;
    try {
      const result = await run(document, operation, context, operationName, variables);
      if (!result.errors?.length && result.data) answer = cache.keep(key, generation, result.data as Record<string, unknown>);
      return result;
    } finally {
      finish(answer);
    }
  };

  async function run(
    document: DocumentNode,
    operation: OperationDefinitionNode | undefined,
    context: unknown,
    operationName: string | undefined,
    variables: Record<string, unknown>,
  ): Promise<ExecutionResult> {
    const interpret = () => execute({ schema, document, contextValue: context, variableValues: variables, operationName });
    const plan = operation?.operation === 'query' ? planFor(document, operationName) : undefined;
    if (!plan) {
      onExecute('interpreted');
      return interpret();
    }
    const result = await plan.query(undefined, context, variables);
    if (!result.errors?.length) {
      onExecute('compiled');
      return result;
    }
    onExecute('fallback');
    return interpret();
  }

  return {
    async load() {
      return { executor };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
}
