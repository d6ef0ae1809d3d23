/** GraphQL over HTTP for the UI: POST with a JSON body (passes Apollo's CSRF prevention), same origin only. */
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { authorizationHeader } from './token.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLErrorShape {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; field?: string };
}

/** A request that came back with GraphQL errors (or none of the data asked for). `code` is the first error's code. */
export class GraphQLRequestError extends Error {
  readonly code: string | undefined;
  constructor(
    message: string,
    readonly errors: readonly GraphQLErrorShape[],
  ) {
    super(message);
    this.name = 'GraphQLRequestError';
    this.code = errors[0]?.extensions?.code;
  }
}

/** The part of the API a section needs is in the schema but not backed by this server yet. */
export const isNotImplemented = (error: unknown): boolean => error instanceof GraphQLRequestError && error.code === 'NOT_IMPLEMENTED';

/** The server wants a (valid) API token. */
export const isUnauthenticated = (error: unknown): boolean => error instanceof GraphQLRequestError && error.code === 'UNAUTHENTICATED';

/** A server that asks to slow down (HTTP 429) is asked again this many times, after the wait it names. */
const RATE_LIMIT_RETRIES = 3;
/** The longest wait a `Retry-After` may impose on a page before its request gives up and shows the error. */
const MAX_RETRY_AFTER_MS = 60_000;

/** `Retry-After` in milliseconds (seconds or an HTTP date); undefined without a usable one. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header?.trim()) return undefined;
  const text = header.trim();
  const ms = /^\d+(\.\d+)?$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)) : undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/**
 * Sends a typed document (generated/graphql.ts); its result and variables types come from schema.graphql. A 429
 * is retried after the `Retry-After` the server names (a page never hammers a server that asked it to wait).
 */
export async function gql<TResult, TVariables>(
  document: DocumentTypeDecoration<TResult, TVariables>,
  variables: TVariables,
  signal?: AbortSignal,
): Promise<TResult> {
  let response: Response;
  for (let attempt = 0; ; attempt++) {
    response = await fetch(GRAPHQL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...authorizationHeader() },
      body: JSON.stringify({ query: String(document), variables }),
      ...(signal ? { signal } : {}),
    });
    const wait = response.status === 429 ? retryAfterMs(response.headers.get('retry-after')) : undefined;
    if (wait === undefined || attempt >= RATE_LIMIT_RETRIES) break;
    await sleep(wait, signal);
  }
  let body: { data?: TResult | null; errors?: GraphQLErrorShape[] };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    throw new GraphQLRequestError(`HTTP ${response.status} ${response.statusText}`, [{ message: `HTTP ${response.status}` }]);
  }
  if (body.errors && body.errors.length > 0) {
    throw new GraphQLRequestError(body.errors.map((e) => e.message).join('; '), body.errors);
  }
  if (!body.data) throw new GraphQLRequestError('empty response', [{ message: 'empty response' }]);
  return body.data;
}

export function describeError(error: unknown): string {
  if (error instanceof GraphQLRequestError) return error.code ? `${error.message} (${error.code})` : error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}
