import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { ApolloServer, HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { parse, type DocumentNode, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Principal } from '../auth/roles.js';
import { ErrorCode, isAppError } from '../errors.js';
import { readBody } from '../http/body.js';
import { sendBody } from '../http/responseBody.js';
import { sendError } from '../http/sendError.js';
import type { Logger } from '../log.js';
import { countOperation, type AppMetrics } from '../metrics.js';
import type { GraphQLContext } from './context.js';
import { clientErrorOf, errorCodeOf, formatError } from './errors.js';
import { repeatedSelection, repeatedSelectionMessage } from './repeatedSelections.js';
import type { ResponseCache } from './responseCache.js';
import { responseCachePlugin } from './responseCachePlugin.js';
import { exceedsJsonBytes, MAX_RESPONSE_BYTES } from './responseSize.js';
import type { BoundedDocumentStore } from './documentStore.js';
import { rootFieldsOf } from './operationFields.js';

export interface ApolloHandlerOptions {
  schema: GraphQLSchema;
  httpServer: Server;
  logger: Logger;
  metrics: AppMetrics;
  maxBodyBytes: number;
  /** Answers to history queries kept until the history changes (responseCache.ts); absent: every query runs. */
  responseCache?: ResponseCache;
  /** Lexical tokens a document may hold (graphql-js parse option). */
  maxQueryTokens: number;
  /** Who is calling; throws UnauthenticatedError (→ HTTP 401) when authentication is on and the token is bad. */
  authenticate: (req: IncomingMessage) => Promise<Principal>;
  /** Builds the per-request context. */
  context: (req: IncomingMessage, principal: Principal) => Promise<GraphQLContext>;
  /** Charges an operation's least cost as it arrives (guard.ts admitOperation): the refusal, or undefined. */
  admit: (principal: Principal) => GraphQLError | undefined | Promise<GraphQLError | undefined>;
  /** Extra plugins (e.g. the subscription server's drain). */
  plugins?: ApolloServerPlugin<GraphQLContext>[];
  /** Parsed and validated documents kept between requests, bounded by the heap they take (documentStore.ts). */
  documentStore: BoundedDocumentStore;
}

function metricsPlugin(metrics: AppMetrics): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      const started = process.hrtime.bigint();
      return {
        async willSendResponse(ctx) {
          const type = ctx.operation?.operation ?? 'unknown';
          const first = ctx.errors?.[0];
          const code = first ? errorCodeOf(first) : 'ok';
          // Root field names of a validated operation: a closed set, whatever names or aliases the client chose.
          const fields = ctx.operation && ctx.document ? rootFieldsOf(ctx.document, ctx.operation) : [];
          countOperation(metrics, type, fields, code, 'http');
          metrics.graphqlDuration.observe({ type }, Number(process.hrtime.bigint() - started) / 1e9);
        },
      };
    },
  };
}

/** The answer as JSON, or an error in its place when it would be larger than MAX_RESPONSE_BYTES (responseSize.ts). */
function stringifyBounded(result: { data?: unknown }): string {
  if (!exceedsJsonBytes(result.data, MAX_RESPONSE_BYTES)) return JSON.stringify(result);
  return JSON.stringify({
    errors: [
      {
        message: `the answer would be larger than ${MAX_RESPONSE_BYTES / (1024 * 1024)} MiB; ask for smaller pages, fewer aliases or fewer fields`,
        extensions: { code: ErrorCode.BadUserInput, limit: 'responseBytes', max: MAX_RESPONSE_BYTES },
      },
    ],
  });
}

/**
 * A selection repeated past MAX_REPEATED_SELECTIONS in the request's document, checked before Apollo validates it (no
 * plugin hook runs between Apollo's parse and its validation). A document that does not parse is left to Apollo, which
 * answers it in its usual shape; one sent by hash only (APQ) was checked when it was registered.
 */
function repeatedSelectionIn(query: unknown, maxTokens: number): ReturnType<typeof repeatedSelection> {
  if (typeof query !== 'string') return undefined;
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens, noLocation: true });
  } catch {
    return undefined;
  }
  return repeatedSelection(document);
}

/**
 * Apollo Server 5 on a plain node `http` server (no framework): translates the request into Apollo's
 * HTTPGraphQLRequest and streams the response back.
 */
export async function createApolloHandler(options: ApolloHandlerOptions) {
  const { logger } = options;
  const apollo = new ApolloServer<GraphQLContext>({
    schema: options.schema,
    // Apollo's own store sizes a document by its JSON, without its source text or tokens: distinct padded documents
    // grew the heap without bound (issue 34, finding 1).
    documentStore: options.documentStore,
    csrfPrevention: true,
    // One operation per request: batching would multiply every limit below by the batch size.
    allowBatchedHttpRequests: false,
    introspection: true,
    // Validation is quadratic in the worst case (thousands of identical fields to compare for merging): bound the
    // document before it is parsed and validated, since no other limit can apply before validation.
    parseOptions: { maxTokens: options.maxQueryTokens },
    includeStacktraceInErrorResponses: false,
    // Apollo's default pretty-prints every response (JSON.stringify with indentation): 7–14% of the server's CPU on a
    // page of 50 events or 100 pools, and a third more bytes to write (issue 17 profiles). Clients parse JSON; compact it is.
    // A kept answer (responseCache.ts) was serialized when it was kept.
    stringifyResult: (result) => options.responseCache?.serialized(result) ?? stringifyBounded(result),
    // rollplane's own SIGTERM/SIGINT handler drains everything and exits 0; Apollo's would re-raise the signal first
    // (exit 143 before the drain). Apollo skips it only when NODE_ENV=test, which is why tests never saw it.
    stopOnTerminationSignals: false,
    formatError: (formatted, error) => formatError(formatted, error, logger),
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: options.httpServer }),
      // Apollo's default landing page loads from a CDN; rollplane must work air-gapped.
      ApolloServerPluginLandingPageDisabled(),
      // The schema has no @cacheControl hints, so Apollo's default cache-control plugin only ever answered `no-store`
      // (set in handle() below), yet its willResolveField hook made Apollo wrap every resolver and run the hook for
      // every resolved field: 5–7% of the server's CPU on a page of 50 events (issue 17 profiles).
      ApolloServerPluginCacheControlDisabled(),
      metricsPlugin(options.metrics),
      responseCachePlugin<GraphQLContext>({
        ...(options.responseCache ? { cache: options.responseCache } : {}),
        onExecute: (executor) => options.metrics.graphqlExecutions.inc({ executor }),
        // Answers are kept per role: what a field shows or refuses depends on the role alone, never on who holds it.
        callerOf: (context) => context.principal.role,
      }),
      ...(options.plugins ?? []),
    ],
  });
  await apollo.start();

  async function handle(req: IncomingMessage, res: ServerResponse, search: string): Promise<void> {
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    // Authentication first: an unauthenticated caller's body is never read or parsed.
    let principal: Principal;
    try {
      principal = await options.authenticate(req);
    } catch (error) {
      const refusal = clientErrorOf(error);
      if (refusal?.code === ErrorCode.Unavailable) {
        // The token cannot be checked while the database is down: 503 (retry later), not a 500.
        options.logger.warn({ err: error }, 'cannot authenticate a request: the database cannot be reached');
        res.setHeader('retry-after', '5');
        return sendError(res, 503, refusal.message, ErrorCode.Unavailable);
      }
      if (!isAppError(error) || error.code !== ErrorCode.Unauthenticated) throw error;
      // Counted, not audited: an unauthenticated caller must not be able to write rows (see operationAudit.ts).
      options.metrics.requestsRefused.inc({ reason: 'unauthenticated', transport: 'http' });
      res.setHeader('www-authenticate', 'Bearer realm="rollplane"');
      return sendError(res, 401, error.message, ErrorCode.Unauthenticated);
    }
    // Then the least an operation costs, before its body is read, parsed or validated.
    const refusal = await options.admit(principal);
    if (refusal) {
      options.metrics.requestsRefused.inc({ reason: 'rate_limited', transport: 'http' });
      const http = refusal.extensions.http as { headers?: Map<string, string> } | undefined;
      res.setHeader('retry-after', http?.headers?.get('retry-after') ?? '1');
      return sendError(res, 429, refusal.message, ErrorCode.RateLimited);
    }
    let body: unknown;
    if (req.method === 'POST') {
      let raw: string;
      try {
        raw = await readBody(req, options.maxBodyBytes);
      } catch (error) {
        return sendError(res, 413, isAppError(error) ? error.message : 'request body too large', ErrorCode.BadUserInput);
      }
      const contentType = headers.get('content-type') ?? '';
      if (contentType.includes('json')) {
        try {
          body = raw.length === 0 ? undefined : JSON.parse(raw);
        } catch (error) {
          return sendError(res, 400, `request body is not valid JSON: ${(error as Error).message}`, 'BAD_REQUEST');
        }
      } else {
        body = raw;
      }
    }
    const repeated = repeatedSelectionIn(
      req.method === 'POST' ? (body as { query?: unknown } | undefined)?.query : new URLSearchParams(search).get('query'),
      options.maxQueryTokens,
    );
    if (repeated) return sendError(res, 400, repeatedSelectionMessage(repeated), ErrorCode.BadUserInput);
    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers, search, body },
      context: () => options.context(req, principal),
    });
    res.statusCode = result.status ?? 200;
    // What the cache-control plugin (disabled above) sent for a schema without hints; sendBody replaces it for GET.
    res.setHeader('cache-control', 'no-store');
    for (const [name, value] of result.headers) res.setHeader(name, value);
    if (result.body.kind === 'complete') return sendBody(req, res, result.body.string);
    for await (const chunk of result.body.asyncIterator) res.write(chunk);
    res.end();
  }

  return { apollo, handle };
}
