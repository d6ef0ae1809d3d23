import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { createClient, type Client } from 'graphql-ws';
import { GRAPHQL_PATH } from './api.js';
import { authorizationHeader } from './token.js';

export type ConnectionState = 'connecting' | 'live' | 'reconnecting';

export interface ResumableOptions<TData, T, TVariables extends { after?: string | null } = { after?: string | null }> {
  /** A typed subscription document (generated/graphql.ts) with an `after` variable. */
  query: DocumentTypeDecoration<TData, TVariables>;
  /** Its other variables (a filter), sent with every (re)subscription. */
  variables?: Omit<TVariables, 'after'>;
  /** Resume position: only events with a larger id are wanted ("0" replays the whole history). */
  after: string;
  /** Picks the item out of `data` (the subscription's root field). */
  select: (data: TData) => T;
  /** The item's event id: the resume cursor. */
  idOf: (item: T) => number;
  onItem: (item: T) => void;
  onError?: (message: string) => void;
}

/** Delay before re-subscribing after the n-th consecutive failure (0-based): 0.5 s doubling to at most 10 s. */
export const backoffMs = (failures: number): number => Math.min(10_000, 500 * 2 ** failures);

/**
 * One graphql-ws connection to this server, shared by every live view, plus subscriptions that survive reconnects.
 *
 * graphql-ws's own retry re-sends the original subscribe message, whose `after` is stale by then: the server would
 * replay rows the page already shows. So the client's retries are off (`retryAttempts: 0`) and each subscription
 * re-subscribes itself with `after` = the last event id it delivered. Ids only grow within a subscription, so
 * dropping anything at or below that id also guards against duplicates from any overlap.
 */
export class LiveConnection {
  readonly client: Client;
  private stateValue: ConnectionState = 'connecting';
  private readonly listeners = new Set<(state: ConnectionState) => void>();

  constructor(url: string = defaultWebSocketUrl()) {
    this.client = createClient({
      url,
      lazy: true,
      retryAttempts: 0,
      keepAlive: 15_000,
      // Read at every (re)connect, so a token entered after a refusal is used by the next attempt.
      connectionParams: () => authorizationHeader(),
      on: {
        connected: () => this.setState('live'),
        closed: () => this.setState('reconnecting'),
      },
    });
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  onState(listener: (state: ConnectionState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Drops the socket at once, as a network failure would; every subscription resumes from where it was. */
  drop(): void {
    this.client.terminate();
  }

  /** Subscribes until the returned function is called, resuming after every disconnect. */
  subscribe<TData, T, TVariables extends { after?: string | null } = { after?: string | null }>(options: ResumableOptions<TData, T, TVariables>): () => void {
    let after = options.after;
    let stopped = false;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let unsubscribe: (() => void) | undefined;

    const retry = () => {
      if (stopped) return;
      unsubscribe = undefined;
      timer = setTimeout(start, backoffMs(failures++));
    };
    const start = () => {
      timer = undefined;
      if (stopped) return;
      unsubscribe = this.client.subscribe<TData>(
        { query: String(options.query), variables: { ...options.variables, after } },
        {
          next: (result) => {
            if (result.errors?.length) {
              options.onError?.(result.errors.map((e) => e.message).join('; '));
              return;
            }
            if (!result.data) return;
            const item = options.select(result.data);
            const id = options.idOf(item);
            if (id <= Number(after)) return;
            after = String(id);
            failures = 0;
            options.onItem(item);
          },
          error: (error: unknown) => {
            // A GraphQL error list is final for this document (validation, NOT_IMPLEMENTED); a closed socket is not.
            if (Array.isArray(error)) {
              options.onError?.(error.map((e: { message?: string }) => e.message ?? String(e)).join('; '));
              failures = Math.max(failures, 4);
            }
            retry();
          },
          // The server ends a subscription only when it shuts down; pick up again on the next server.
          complete: retry,
        },
      );
    };
    start();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      unsubscribe?.();
    };
  }

  dispose(): void {
    void this.client.dispose();
  }

  private setState(state: ConnectionState): void {
    if (state === this.stateValue) return;
    this.stateValue = state;
    for (const listener of this.listeners) listener(state);
  }
}

export function defaultWebSocketUrl(): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${GRAPHQL_PATH}`;
}
