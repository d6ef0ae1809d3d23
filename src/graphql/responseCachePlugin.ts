import { type ApolloServerPlugin, type GraphQLRequestContext, HeaderMap } from '@apollo/server';
import type { CachedAnswer, ResponseCache } from './responseCache.js';

/**
 * Which executor answered an operation over HTTP (`rollplane_graphql_executions_total`): `interpreted` (graphql-js,
 * through Apollo's own execution) or `cached` (nothing ran: the response cache had the answer, ADR 0026).
 */
export type Executor = 'interpreted' | 'cached';

/** What a request that reads for the cache must do once its answer is known. */
interface PendingRead {
  key: string;
  generation: string;
  /** Ends the read (responseCache.startRead); called once, with the answer to share or undefined. */
  finish: (answer: CachedAnswer | undefined) => void;
}

/**
 * Serves kept answers (responseCache.ts) through Apollo's `responseForOperation` hook, which runs after the operation
 * is resolved and every `didResolveOperation` hook has passed (the guard: role checks, cost and rate limits) and
 * before execution; a kept answer skips execution. An answer that ran is kept when execution ends without errors.
 * `onExecute` is told which executor answered each operation (ADR 0039: this replaced a custom executor plugged in
 * through Apollo's gateway interface).
 */
export function responseCachePlugin<TContext extends object>(options: {
  /** Absent: every operation runs (ROLLPLANE_RESPONSE_CACHE_MB=0); only the executions are counted. */
  cache?: ResponseCache;
  onExecute: (executor: Executor) => void;
  /** What, beyond the document and its variables, can change an answer: the caller's role. */
  callerOf: (context: TContext) => string;
}): ApolloServerPlugin<TContext> {
  const { cache, onExecute, callerOf } = options;
  return {
    async requestDidStart() {
      let pending: PendingRead | undefined;
      const settle = (answer: CachedAnswer | undefined) => {
        pending?.finish(answer);
        pending = undefined;
      };
      return {
        async responseForOperation(requestContext: GraphQLRequestContext<TContext>) {
          const { document, operation } = requestContext;
          if (!cache || !document || !operation) return null;
          const source = cache.sourceOf(document, operation);
          if (!source) return null;
          // Read before the query's own reads: an answer is kept under the generation it was read entirely after.
          const generation = cache.generationNow(source);
          if (generation === null) return null;
          const { request, queryHash } = requestContext;
          const key = cache.keyOf(queryHash!, request.operationName ?? undefined, callerOf(requestContext.contextValue), request.variables ?? {});
          if (key === undefined) return null;
          const answer = cache.lookup(key, generation) ?? (await cache.readInProgress(key, generation));
          if (answer) {
            onExecute('cached');
            return { http: { headers: new HeaderMap(), status: undefined }, body: { kind: 'single', singleResult: { data: answer.data } } };
          }
          pending = { key, generation, finish: cache.startRead(key, generation) };
          return null;
        },
        async executionDidStart(requestContext) {
          onExecute('interpreted');
          return {
            async executionDidEnd(error) {
              if (!pending) return;
              // Apollo has set the response's body when execution ends without throwing.
              const body = error ? undefined : requestContext.response.body;
              const result = body?.kind === 'single' ? body.singleResult : undefined;
              settle(result && !result.errors?.length && result.data ? cache!.keep(pending.key, pending.generation, result.data) : undefined);
            },
          };
        },
        // Whatever ended the request (an error thrown before or during execution), nobody waits for this read for ever.
        async willSendResponse() {
          settle(undefined);
        },
      };
    },
  };
}
