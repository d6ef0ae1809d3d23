import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { ErrorCode } from '../errors.js';
import { RemoteError, UnreachableError } from './exitCodes.js';
import { backoffDelayMs, retryAfterMs } from './retryPolicy.js';

export interface GraphQLErrorBody {
  message: string;
  extensions?: { code?: string; [key: string]: unknown };
}

export interface GraphQLClientOptions {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** Retries after the first attempt for network errors, 5xx, 429 and UNAVAILABLE (default 4). */
  retries?: number;
  /** Per-attempt timeout (default 30 s). */
  requestTimeoutMs?: number;
  /** Told before each retry (the CLI prints it on stderr). */
  onRetry?: (info: { attempt: number; reason: string; delayMs: number }) => void;
  delay?: (ms: number) => Promise<void>;
  random?: () => number;
  fetch?: typeof fetch;
}

/** Variables may be left out when the operation declares none. */
type VariablesOf<TVariables> = Record<string, never> extends TVariables ? [variables?: TVariables] : [variables: TVariables];

const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

/** Everything that may succeed when asked again: the request was not applied, or applying it again is harmless. */
class Retriable extends Error {
  constructor(
    readonly reason: string,
    readonly retryAfter: number | undefined,
    readonly final: Error,
  ) {
    super(reason);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A GraphQL-over-HTTP client for the CLI. Network errors, 5xx, 429 (honouring `Retry-After`) and UNAVAILABLE are
 * retried with exponential backoff; what is left after the last attempt is an UnreachableError (exit 3). Mutations
 * are retried too: the bump and rollback mutations carry an idempotency key, so a retry after a lost response
 * returns the rollout the first attempt created.
 */
export class GraphQLClient {
  readonly url: string;
  readonly token: string | undefined;
  private readonly retries: number;
  private readonly requestTimeoutMs: number;
  private readonly delay: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: GraphQLClientOptions) {
    this.url = options.url;
    this.token = options.token;
    this.retries = options.retries ?? 4;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.delay = options.delay ?? sleep;
    this.random = options.random ?? Math.random;
    this.fetchFn = options.fetch ?? fetch;
  }

  /**
   * Sends a typed document (generated/graphql.ts): its result and variables types come from schema.graphql. A plain
   * string is accepted for callers that build a document at run time, with the result type given by the caller.
   */
  request<TResult, TVariables>(document: DocumentTypeDecoration<TResult, TVariables>, ...variables: VariablesOf<TVariables>): Promise<TResult>;
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  async request<T>(document: string | DocumentTypeDecoration<T, unknown>, variables: object = {}): Promise<T> {
    const query = String(document);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt<T>(query, variables);
      } catch (error) {
        if (!(error instanceof Retriable)) throw error;
        if (attempt >= this.retries) throw error.final;
        const delayMs = error.retryAfter ?? backoffDelayMs(attempt, this.random);
        this.options.onRetry?.({ attempt: attempt + 1, reason: error.reason, delayMs });
        await this.delay(delayMs);
      }
    }
  }

  private async attempt<T>(query: string, variables: object): Promise<T> {
    let response: Response;
    try {
      response = await this.fetchFn(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (error) {
      const reason = describeNetworkError(error);
      throw new Retriable(reason, undefined, new UnreachableError(`cannot reach ${this.url}: ${reason}`, { cause: error }));
    }
    const text = await response.text().catch(() => '');
    const body = parseBody(text);
    const first = body?.errors?.[0];

    if (response.status === 429) {
      const wait = retryAfterMs(response.headers.get('retry-after'), first?.extensions?.retryAfterSeconds);
      const error = first ? remoteError(first) : new RemoteError(ErrorCode.RateLimited, 'rate limited (HTTP 429)');
      throw new Retriable('rate limited (HTTP 429)', wait, error);
    }
    if (response.status === 401) {
      throw first ? remoteError(first) : new RemoteError(ErrorCode.Unauthenticated, 'unauthenticated (HTTP 401): set ROLLPLANE_TOKEN to a valid token');
    }
    if (response.status >= 500) {
      const reason = `HTTP ${response.status}${first ? `: ${first.message}` : ''}`;
      throw new Retriable(reason, undefined, new UnreachableError(`${this.url} answered ${reason}`));
    }
    if (!body) {
      throw new RemoteError(ErrorCode.Internal, `unexpected response from ${this.url} (HTTP ${response.status}, not GraphQL JSON)`);
    }
    if (first) {
      const error = remoteError(first);
      if (error.code === ErrorCode.Unavailable) throw new Retriable(first.message, undefined, new UnreachableError(`server unavailable: ${first.message}`));
      throw error;
    }
    if (body.data === undefined || body.data === null) throw new RemoteError(ErrorCode.Internal, `no data in the response from ${this.url}`);
    return body.data as T;
  }
}

function parseBody(text: string): { data?: unknown; errors?: GraphQLErrorBody[] } | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as { data?: unknown; errors?: GraphQLErrorBody[] }) : undefined;
  } catch {
    return undefined;
  }
}

/** A GraphQL error as an AppError; codes this CLI does not know (GRAPHQL_VALIDATION_FAILED: version skew) are failures. */
export function remoteError(error: GraphQLErrorBody): RemoteError {
  const raw = typeof error.extensions?.code === 'string' ? error.extensions.code : 'INTERNAL_SERVER_ERROR';
  const code = KNOWN_CODES.has(raw) ? (raw as ErrorCode) : ErrorCode.Internal;
  const details: Record<string, unknown> = { code: raw };
  for (const key of ['field', 'retryAfterSeconds', 'id', 'state', 'feature'] as const) {
    if (error.extensions?.[key] !== undefined) details[key] = error.extensions[key];
  }
  return new RemoteError(code, error.message, details);
}

function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return 'request timed out';
    type Cause = { code?: string; message?: string; errors?: Cause[] };
    const cause = (error as { cause?: Cause }).cause;
    // Happy eyeballs reports an AggregateError with one error per address tried.
    const first = cause?.code ? cause : cause?.errors?.find((e) => e.code);
    if (first?.code) return `${first.code}${first.message ? ` (${first.message})` : ''}`;
    return cause?.message ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}
