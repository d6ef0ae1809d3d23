import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  getVariableValues,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  visit,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/**
 * Queries and mutations over HTTP that clients send again and again run as compiled JavaScript (graphql-jit); the
 * rest run in graphql-js's interpreter, as before. docs/adr/0025-compiled-execution.md has the reasons and the figures.
 *
 * Why compile: on a page of 20 rollouts (about 580 resolved fields) graphql-js's per-field work — argument coercion,
 * field collection, promise bookkeeping for every object — was 30–40% of the server's CPU (issue 17 profiles). A
 * compiled query plans that once per document and then runs straight-line code per row.
 *
 * Why not every document: compiling costs more than validating (about 3–9 ms for the UI's queries, 50–100 ms for a
 * document of a few hundred fields), so a client sending a stream of distinct documents would make the server compile
 * each one. By default a document is compiled on its third run (ROLLPLANE_GRAPHQL_COMPILE_AFTER), and only when it is small enough ({@link MAX_COMPILED_FIELDS});
 * the UI, the CLI and CI send the same few documents over and over, and those are the ones worth compiling.
 *
 * Apollo Server takes a custom executor only through its gateway interface; this "gateway" serves the one local schema
 * and never changes it. Everything before execution (parsing, validation, the guard and the cost limits in
 * didResolveOperation, the audit in willSendResponse) is Apollo's pipeline as before. Subscriptions are graphql-ws's
 * and keep graphql-js (src/graphql/fanOut.ts): each event runs once per distinct document there already.
 */

/** Runs of a document in the interpreter before it is compiled (ROLLPLANE_GRAPHQL_COMPILE_AFTER's default): one-off
 * documents never pay for compilation. */
export const DEFAULT_COMPILE_AFTER = 2;

/** Documents with more field selections than this (fragments counted once) are never compiled. */
export const MAX_COMPILED_FIELDS = 250;

export type Executor = 'compiled' | 'interpreted';

/** What this module remembers of one parsed document. */
interface DocumentState {
  runs: number;
  compilable: boolean;
  /** Compiled plans by operation name ('' for the only operation). */
  plans: Map<string, CompiledQuery>;
}

function fieldCountOf(document: DocumentNode): number {
  let fields = 0;
  visit(document, {
    [Kind.FIELD]() {
      fields += 1;
    },
  });
  return fields;
}

/**
 * graphql-jit's errors are not quite graphql-js's: some are its own error class, and even its GraphQLErrors can lack
 * the `extensions` object graphql-js always sets (Apollo's error normalization then throws and answers "Internal server
 * error"). Rebuild each as graphql-js would have made it: same message, path, locations, original error and extensions.
 */
function withGraphQLErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors) return result;
  const errors = result.errors.map((error) => {
    // graphql-js's own (it always sets `extensions`): kept as they are, `nodes` included — Apollo reads a variable's
    // definition node there to answer BAD_USER_INPUT.
    if (error instanceof GraphQLError && error.extensions !== undefined) return error;
    const original = error.originalError ?? undefined;
    const rebuilt = new GraphQLError(error.message, {
      path: error.path,
      originalError: original,
      extensions: error.extensions ?? (original as { extensions?: Record<string, unknown> } | undefined)?.extensions,
    });
    if (error.locations) Object.assign(rebuilt, { locations: error.locations });
    return rebuilt;
  });
  return { ...result, errors };
}

/** graphql-js's own verdict on the variables, when it refuses them. */
function variableErrors(schema: GraphQLSchema, operation: OperationDefinitionNode, variables: Record<string, unknown>): ExecutionResult | undefined {
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables, { maxErrors: 50 });
  return coerced.errors ? { errors: coerced.errors } : undefined;
}

/**
 * The gateway that hands Apollo the executor for `schema`. `onExecute` is told which executor ran each operation
 * (the `rollplane_graphql_executions_total` metric).
 */
export function compiledExecutionGateway(
  schema: GraphQLSchema,
  options: {
    /** Interpreted runs of a query document before it is compiled; null: never compiled (graphql-js only). */
    compileAfter: number | null;
    onExecute?: (executor: Executor) => void;
  },
): GatewayInterface {
  const { compileAfter } = options;
  const onExecute = options.onExecute ?? (() => {});
  // Apollo's document store hands back the same DocumentNode for the same query text, so state keyed on it lives as
  // long as Apollo keeps the parsed document (its LRU bounds both).
  const documents = new WeakMap<DocumentNode, DocumentState>();

  function stateOf(document: DocumentNode): DocumentState {
    let state = documents.get(document);
    if (!state) {
      state = { runs: 0, compilable: compileAfter !== null && fieldCountOf(document) <= MAX_COMPILED_FIELDS, plans: new Map() };
      documents.set(document, state);
    }
    return state;
  }

  function planFor(state: DocumentState, document: DocumentNode, operationName: string | undefined): CompiledQuery | undefined {
    state.runs += 1;
    if (!state.compilable || state.runs <= (compileAfter ?? 0)) return undefined;
    const key = operationName ?? '';
    const known = state.plans.get(key);
    if (known) return known;
    const compiled = compileQuery(schema, document, operationName);
    if (!isCompiledQuery(compiled)) {
      // Apollo has validated the document and chosen the operation, so graphql-jit refusing it is a gap in
      // graphql-jit: interpret this document from now on rather than answer differently.
      state.compilable = false;
      return undefined;
    }
    state.plans.set(key, compiled);
    return compiled;
  }

  const interpret = (document: DocumentNode, operationName: string | undefined, context: unknown, variables: Record<string, unknown>) => {
    onExecute('interpreted');
    return execute({ schema, document, contextValue: context, variableValues: variables, operationName });
  };

  const executor: GatewayExecutor = async (requestContext) => {
    const { document, operation, context } = requestContext;
    // The client's operationName, not the chosen operation's name (null when none was chosen): graphql-js must see an
    // unknown name to answer it as an unknown operation, as Apollo expects.
    const operationName = requestContext.request.operationName ?? undefined;
    const variables = requestContext.request.variables ?? {};
    // Only queries are compiled. Mutations write and are rare next to reads, and graphql-jit does not apply the
    // defaults of input-object fields (`dryRun: Boolean! = false`), which only mutation inputs have. No operation
    // (an operationName that names none): graphql-js answers that as Apollo expects.
    if (operation?.operation !== 'query') return interpret(document, operationName, context, variables);
    const state = stateOf(document);
    const plan = planFor(state, document, operationName);
    if (!plan) return interpret(document, operationName, context, variables);
    const result = await plan.query(undefined, context, variables);
    if (result.data !== undefined) {
      onExecute('compiled');
      return withGraphQLErrors(result);
    }
    // No `data` at all: graphql-jit refused the variables before executing. graphql-js's messages say which variable
    // and where inside it, with the scalar's own reason ("DateTime must be an ISO 8601 …"), and Apollo reads them to
    // answer BAD_USER_INPUT: coerce once more on this rare path and answer with graphql-js's verdict. Should
    // graphql-jit refuse what graphql-js accepts, the document is interpreted from now on.
    const refusal = variableErrors(schema, operation, variables);
    if (refusal) {
      onExecute('compiled');
      return refusal;
    }
    state.compilable = false;
    return interpret(document, operationName, context, variables);
  };

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
