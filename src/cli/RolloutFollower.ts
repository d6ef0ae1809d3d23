import { ErrorCode } from '../errors.js';
import { RemoteError, UnreachableError, WaitTimeoutError } from './exitCodes.js';
import { isTerminalState, type RolloutEvent, type RolloutUpdate, type RolloutView } from './operations.js';
import type { SubscribeToRollout, SubscriptionError } from './subscriptionTransport.js';

export interface FollowerOptions {
  fetchRollout(id: string): Promise<RolloutView | null>;
  /** The newest event id on the server; the subscription resumes after it, so nothing between is missed. */
  lastEventId(): Promise<string>;
  /** Undefined: poll only. */
  subscribe?: SubscribeToRollout | undefined;
  /** Every observation of the rollout (the first from the query, then each update). */
  onUpdate(rollout: RolloutView): void;
  /** Each event of the rollout the subscription delivers, before the rollout it left (not while polling). */
  onEvent?(event: RolloutEvent): void;
  /** Connection news for the user: dropped, reconnecting, polling. */
  onNotice?(message: string): void;
  /** Polling interval once the socket is given up (default 2 s). */
  pollIntervalMs?: number;
  /** While subscribed, the rollout is also read this often, in case a socket dies silently (default 15 s). */
  safetyPollMs?: number;
  /** Consecutive socket failures before falling back to polling (default 5; 2 when the socket never connected). */
  maxSocketFailures?: number;
  /** First reconnect delay, doubled per consecutive failure up to 5 s (default 250 ms). */
  reconnectDelayMs?: number;
}

type Outcome = { kind: 'terminal' } | { kind: 'deadline' } | { kind: 'ended'; error?: SubscriptionError; connected: boolean };

/**
 * Follows one rollout until it ends: `rolloutUpdated` resumed `after` the last event seen (so a reconnect misses and
 * repeats nothing), reconnecting on drops, polling `rollout(id)` when the socket keeps failing. Resolves with the
 * rollout in its terminal state; rejects with WaitTimeoutError at the deadline, with RemoteError when the server
 * refuses the token or the rollout does not exist.
 */
export class RolloutFollower {
  private readonly pollIntervalMs: number;
  private readonly safetyPollMs: number;
  private readonly maxSocketFailures: number;
  private readonly reconnectDelayMs: number;
  private unreachableSince: number | undefined;

  constructor(private readonly options: FollowerOptions) {
    this.pollIntervalMs = options.pollIntervalMs ?? 2000;
    this.safetyPollMs = options.safetyPollMs ?? 15_000;
    this.maxSocketFailures = options.maxSocketFailures ?? 5;
    this.reconnectDelayMs = options.reconnectDelayMs ?? 250;
  }

  async follow(id: string, timeoutMs: number): Promise<RolloutView> {
    const deadline = Date.now() + timeoutMs;
    let lastSeen = await this.options.lastEventId();
    let rollout = await this.read(id);
    this.options.onUpdate(rollout);
    let subscribe = this.options.subscribe;
    let failures = 0;

    while (!isTerminalState(rollout.state)) {
      if (Date.now() >= deadline) throw this.timeout(rollout, timeoutMs);
      if (!subscribe) {
        await sleep(Math.min(this.pollIntervalMs, deadline - Date.now()));
        rollout = (await this.observeThroughOutages(id)) ?? rollout;
        continue;
      }
      const outcome = await this.subscribeUntil(
        subscribe,
        id,
        lastSeen,
        deadline,
        (update) => {
          lastSeen = update.event.id;
          rollout = update.rollout;
        },
        (current) => (rollout = current),
      );
      if (outcome.kind !== 'ended') continue;
      const error = outcome.error;
      if (error?.kind === 'auth') throw new RemoteError(error.code ?? ErrorCode.Unauthenticated, error.message);
      failures = outcome.connected ? 1 : failures + 1;
      const limit = outcome.connected ? this.maxSocketFailures : Math.min(2, this.maxSocketFailures);
      if (error?.kind === 'graphql' || failures >= limit) {
        this.options.onNotice?.(
          `live updates unavailable (${error?.message ?? 'subscription ended'}); polling every ${Math.round(this.pollIntervalMs / 100) / 10}s`,
        );
        subscribe = undefined;
        continue;
      }
      this.options.onNotice?.(`live updates interrupted (${error?.message ?? 'subscription ended'}); reconnecting`);
      await sleep(Math.min(5000, this.reconnectDelayMs * 2 ** (failures - 1), Math.max(0, deadline - Date.now())));
      // Catch up on what the query says, in case the rollout ended while the socket was down.
      rollout = (await this.observeThroughOutages(id)) ?? rollout;
    }
    return rollout;
  }

  private subscribeUntil(
    subscribe: SubscribeToRollout,
    id: string,
    after: string,
    deadline: number,
    onUpdate: (update: RolloutUpdate) => void,
    onPolled: (rollout: RolloutView) => void,
  ): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let connected = false;
      let done = false;
      let close: (() => void) | undefined;
      const finish = (outcome: Outcome) => {
        if (done) return;
        done = true;
        clearTimeout(deadlineTimer);
        clearInterval(safetyTimer);
        close?.();
        resolve(outcome);
      };
      const deadlineTimer = setTimeout(() => finish({ kind: 'deadline' }), Math.max(0, deadline - Date.now()));
      const safetyTimer = setInterval(() => {
        this.options.fetchRollout(id).then(
          (current) => {
            if (done || !current) return;
            this.reachable();
            onPolled(current);
            this.options.onUpdate(current);
            if (isTerminalState(current.state)) finish({ kind: 'terminal' });
          },
          () => {},
        );
      }, this.safetyPollMs);
      close = subscribe(
        { id, after },
        {
          connected: () => {
            connected = true;
            this.reachable();
          },
          next: (update) => {
            if (done) return;
            connected = true;
            this.reachable();
            onUpdate(update);
            this.options.onEvent?.(update.event);
            this.options.onUpdate(update.rollout);
            if (isTerminalState(update.rollout.state)) finish({ kind: 'terminal' });
          },
          error: (error) => finish({ kind: 'ended', error, connected }),
          complete: () => finish({ kind: 'ended', connected }),
        },
      );
      if (done) close();
    });
  }

  private async read(id: string): Promise<RolloutView> {
    const rollout = await this.options.fetchRollout(id);
    if (!rollout) throw new RemoteError(ErrorCode.NotFound, `rollout ${id} not found`, { id });
    return rollout;
  }

  private async observe(id: string): Promise<RolloutView> {
    const rollout = await this.read(id);
    this.options.onUpdate(rollout);
    return rollout;
  }

  /**
   * Once following, a server that is briefly away (a restart, a rolling update) is not the end of the wait: the
   * rollout goes on without it. Undefined while unreachable; the deadline still applies.
   */
  private async observeThroughOutages(id: string): Promise<RolloutView | undefined> {
    try {
      const rollout = await this.observe(id);
      this.reachable();
      return rollout;
    } catch (error) {
      if (!(error instanceof UnreachableError)) throw error;
      if (this.unreachableSince === undefined) this.options.onNotice?.(`${error.message}; still waiting`);
      this.unreachableSince ??= Date.now();
      return undefined;
    }
  }

  /** Any answer from the server, by whichever path, ends an outage (and says so once). */
  private reachable(): void {
    if (this.unreachableSince !== undefined) this.options.onNotice?.('server reachable again');
    this.unreachableSince = undefined;
  }

  private timeout(rollout: RolloutView, timeoutMs: number): WaitTimeoutError {
    return new WaitTimeoutError(
      `timed out after ${formatSeconds(timeoutMs / 1000)} waiting for rollout ${rollout.id}; it is ${rollout.state} and goes on on the server`,
      rollout,
    );
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

function formatSeconds(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${Math.round(seconds * 10) / 10}s`;
}
