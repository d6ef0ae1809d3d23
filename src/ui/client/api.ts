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

/** Sends a typed document (generated/graphql.ts); its result and variables types come from schema.graphql. */
export async function gql<TResult, TVariables>(
  document: DocumentTypeDecoration<TResult, TVariables>,
  variables: TVariables,
  signal?: AbortSignal,
): Promise<TResult> {
  const response = await fetch(GRAPHQL_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...authorizationHeader() },
    body: JSON.stringify({ query: String(document), variables }),
    ...(signal ? { signal } : {}),
  });
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
