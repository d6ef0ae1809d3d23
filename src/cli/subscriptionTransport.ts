import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ErrorCode } from '../errors.js';
import { remoteError, type GraphQLErrorBody } from './GraphQLClient.js';
import type { FollowSubscription } from './generated/graphql.js';
import { ROLLOUT_UPDATED_SUBSCRIPTION, type RolloutUpdate } from './operations.js';

/** Why a subscription ended early. `auth`: the server refused the token (stop, exit 3); `transport`: try again. */
export class SubscriptionError extends Error {
  constructor(
    readonly kind: 'auth' | 'transport' | 'graphql',
    message: string,
    readonly code?: ErrorCode,
  ) {
    super(message);
  }
}

export interface UpdateSink {
  /** The socket is acknowledged (connection_init accepted). */
  connected(): void;
  next(update: RolloutUpdate): void;
  error(error: SubscriptionError): void;
  /** The server ended the subscription normally. */
  complete(): void;
}

/** Opens `rolloutUpdated(filter: {rolloutId}, after)`; returns a function that closes it. */
export type SubscribeToRollout = (variables: { id: string; after: string | undefined }, sink: UpdateSink) => () => void;

/** graphql-ws close codes that mean the credentials were refused. */
const AUTH_CLOSE_CODES = new Set([4401, 4403]);

/**
 * `rolloutUpdated` over graphql-ws on the GraphQL URL (http → ws). The token goes both in the upgrade request's
 * `Authorization` header and in `connection_init` (`{ authorization: "Bearer …" }`), where the server checks it.
 * One socket per subscription and no retries here: the follower decides about reconnecting.
 */
export function websocketSubscriber(url: string, token: string | undefined, options: { connectTimeoutMs?: number } = {}): SubscribeToRollout {
  // A proxy that swallows the upgrade, or a server that never acknowledges, must not stall the wait forever.
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const wsUrl = url.replace(/^http/i, 'ws');
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  class AuthWebSocket extends WebSocket {
    constructor(address: string | URL, protocols?: string | string[]) {
      super(address, protocols, { headers, handshakeTimeout: connectTimeoutMs });
    }
  }
  return (variables, sink) => {
    let ended = false;
    const end = (fn: () => void) => {
      if (ended) return;
      ended = true;
      fn();
    };
    const client = createClient({
      url: wsUrl,
      webSocketImpl: AuthWebSocket,
      lazy: true,
      retryAttempts: 0,
      connectionAckWaitTimeout: connectTimeoutMs,
      ...(token ? { connectionParams: { authorization: `Bearer ${token}` } } : {}),
      on: { connected: () => sink.connected() },
    });
    const unsubscribe = client.subscribe<FollowSubscription>(
      { query: String(ROLLOUT_UPDATED_SUBSCRIPTION), variables: { id: variables.id, ...(variables.after !== undefined ? { after: variables.after } : {}) } },
      {
        next: (result) => {
          if (ended) return;
          if (result.errors?.length) {
            end(() => sink.error(fromGraphQLErrors(result.errors as GraphQLErrorBody[])));
            return;
          }
          if (result.data?.rolloutUpdated) sink.next(result.data.rolloutUpdated);
        },
        error: (error) => end(() => sink.error(classify(error))),
        complete: () => end(() => sink.complete()),
      },
    );
    return () => {
      ended = true;
      unsubscribe();
      void client.dispose();
    };
  };
}

function fromGraphQLErrors(errors: readonly GraphQLErrorBody[]): SubscriptionError {
  const error = remoteError(errors[0]!);
  const auth = error.code === ErrorCode.Unauthenticated || error.code === ErrorCode.Forbidden;
  return new SubscriptionError(auth ? 'auth' : 'graphql', error.message, error.code);
}

function classify(error: unknown): SubscriptionError {
  if (Array.isArray(error)) return fromGraphQLErrors(error as GraphQLErrorBody[]);
  const closeCode = typeof (error as { code?: unknown })?.code === 'number' ? (error as { code: number }).code : undefined;
  const reason = (error as { reason?: string })?.reason;
  if (closeCode !== undefined && AUTH_CLOSE_CODES.has(closeCode)) {
    return new SubscriptionError('auth', `subscription refused: ${reason || closeCode}`, closeCode === 4401 ? ErrorCode.Unauthenticated : ErrorCode.Forbidden);
  }
  const text = error instanceof Error ? error.message : ((error as { message?: string })?.message ?? '');
  // The `ws` client reports a refused upgrade as "Unexpected server response: 401".
  const upgradeStatus = /Unexpected server response: (\d{3})/.exec(text)?.[1];
  if (upgradeStatus === '401' || upgradeStatus === '403') {
    return new SubscriptionError(
      'auth',
      `subscription refused (HTTP ${upgradeStatus})`,
      upgradeStatus === '401' ? ErrorCode.Unauthenticated : ErrorCode.Forbidden,
    );
  }
  const message = closeCode !== undefined ? `socket closed (${closeCode}${reason ? ` ${reason}` : ''})` : text || 'socket error';
  return new SubscriptionError('transport', message);
}
