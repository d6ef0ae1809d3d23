import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export interface GraphQLResponse<T = any> {
  status: number;
  data?: T;
  errors?: { message: string; path?: unknown[]; extensions?: { code?: string; [key: string]: unknown } }[];
}

/** POSTs a GraphQL operation over real HTTP. */
export async function gql<T = any>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GraphQLResponse<T>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as Omit<GraphQLResponse<T>, 'status'>;
  return { status: res.status, ...body };
}

/** `gql`, for a call that must succeed: its data, or a throw with the errors' messages. */
export async function gqlData<T = any>(url: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const res = await gql<T>(url, query, variables);
  if (res.errors) throw new Error(res.errors.map((e) => e.message).join('; '));
  return res.data as T;
}

/** A graphql-ws client over a real WebSocket. */
export function wsClient(url: string, options: { connectionParams?: Record<string, unknown> } = {}): Client {
  return createClient({
    url: url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    ...(options.connectionParams ? { connectionParams: options.connectionParams } : {}),
  });
}

/** Subscribes and collects results; `next(n)` waits until n results have arrived. */
export function collect<T = any>(client: Client, query: string, variables: Record<string, unknown> = {}) {
  const results: T[] = [];
  const errors: unknown[] = [];
  let completed = false;
  const waiters: { n: number; resolve: () => void }[] = [];
  const notify = () => {
    for (const w of [...waiters])
      if (results.length >= w.n || completed || errors.length) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  };
  const unsubscribe = client.subscribe<T>(
    { query, variables },
    {
      next: (value) => {
        if (value.errors) errors.push(value.errors);
        else results.push(value.data as T);
        notify();
      },
      error: (error) => {
        // A socket closed by the server arrives as a CloseEvent, which JSON.stringify renders as {}.
        const close = error as { code?: unknown; reason?: unknown };
        errors.push(typeof close.code === 'number' ? { code: close.code, reason: close.reason } : error);
        notify();
      },
      complete: () => {
        completed = true;
        notify();
      },
    },
  );
  return {
    results,
    errors,
    isCompleted: () => completed,
    unsubscribe,
    /** Resolves once `n` results arrived (or the subscription ended/errored); rejects after `timeoutMs`. */
    waitFor(n: number, timeoutMs = 10_000): Promise<void> {
      if (results.length >= n || completed || errors.length) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${n} results; have ${results.length}`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
  };
}
