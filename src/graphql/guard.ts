import { HeaderMap } from '@apollo/server';
import { GraphQLError, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { RateLimiter } from '../auth/RateLimiter.js';
import { requiredRole } from '../auth/policy.js';
import { principalName, roleAllows, type Principal } from '../auth/roles.js';
import type { ReplayCharge } from '../domain/EventLog.js';
import { ErrorCode } from '../errors.js';
import { dryRunOnlyFields, rootFieldsOf } from './operationFields.js';
import { checkQueryLimits, type ListSizes, type QueryLimits } from './queryLimits.js';

export interface GuardOptions {
  schema: GraphQLSchema;
  limits: QueryLimits;
  /** One unit per mutation; shared by every replica on PostgreSQL. */
  mutationLimiter: RateLimiter;
  /** The operation's estimated cost per operation of any type (per replica). */
  queryCostLimiter: RateLimiter;
  /** The current size of lists without `first`, for the cost estimate (queryLimits.ts). */
  listSizes?: ListSizes;
}

/** What the guard decided about one operation: the root fields it would run, and the refusal if any. */
export interface GuardVerdict {
  fields: string[];
  /** The operation's estimated cost (queryLimits.ts): for a subscription, what each event it sends costs. */
  cost: number;
  error?: GraphQLError;
}

/**
 * The key rate limits and connection caps are kept under: the token. Without authentication every caller is local
 * (authentication may be off only on a loopback address) and all of them are one key: each of 127.0.0.0/8's sixteen
 * million addresses reaches the server, so a key per address would be a budget per address the caller picks.
 */
export function callerKey(principal: Principal): string {
  return principal.kind === 'token' ? `token:${principal.tokenId}` : 'anonymous';
}

/**
 * The least an operation costs the caller's query-cost budget, whatever its estimate: answering `{ __typename }` took
 * 0.37–0.52 ms of CPU here, as much as ~350 estimated units of a real page (`events(first: 50)` with five fields is 351
 * units and 0.8 ms), so at cost 1 a caller could run ~10,000 cheap operations a second, a whole core (issue 34, attack
 * 11, F9). At 50, a caller runs at most ~200 of them a second (a tenth of a core) after a burst of ~2,000, which no
 * screen, CLI or pipeline comes near; charging the full ~350 would leave a shared CI token ~28 a second.
 */
export const OPERATION_MIN_COST = 50;

/**
 * Charges OPERATION_MIN_COST for an operation as it arrives, before its document is read, parsed or validated, and
 * answers the refusal to send when the caller's budget cannot pay it (undefined when admitted). Charged at the guard
 * instead, parse and validation errors were free: a viewer's flood of invalid 2,000-token documents, each ~150 ms of
 * validation, held /healthz for 0.4–0.8 s and never ran out of budget (issue 34, attack 12). guardOperation charges
 * the rest of the operation's estimate.
 */
export function admitOperation(
  options: Pick<GuardOptions, 'queryCostLimiter'>,
  principal: Principal,
): GraphQLError | undefined | Promise<GraphQLError | undefined> {
  return thenIfPromise(options.queryCostLimiter.take(callerKey(principal), OPERATION_MIN_COST), (waitMs) =>
    waitMs > 0 ? rateLimited('queries (their estimated cost)', waitMs) : undefined,
  );
}

function rateLimited(what: string, waitMs: number): GraphQLError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new GraphQLError(`too many ${what}; retry in ${seconds}s`, {
    extensions: { code: ErrorCode.RateLimited, retryAfterSeconds: seconds, http: { status: 429, headers: new HeaderMap([['retry-after', String(seconds)]]) } },
  });
}

/**
 * Checks one operation before anything of it executes, for HTTP (Apollo plugin) and WebSocket (graphql-ws onSubscribe)
 * alike: query limits, the caller's rate limits, then the caller's role for every root field the operation can run,
 * with fragments expanded (rootFieldsOf). Nothing has run when it refuses, so a refused request changes nothing; the
 * resolvers check the role again (rootFieldPolicy.ts), so a path that skipped this guard would still be refused.
 *
 * Rate limits come before the role check on purpose: refused attempts spend the caller's budget too, which bounds how
 * many FORBIDDEN audit entries one caller can write.
 */
export function guardOperation(
  options: GuardOptions,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  principal: Principal,
): GuardVerdict | Promise<GuardVerdict> {
  const fields = rootFieldsOf(document, operation);
  const { cost, error: limitError } = checkQueryLimits(options.schema, document, operation, variables, options.limits, options.listSizes);
  if (limitError) return { fields, cost, error: limitError };
  const key = callerKey(principal);
  const afterMutationLimit = (waitMs: number): GuardVerdict | Promise<GuardVerdict> => {
    if (waitMs > 0) return { fields, cost, error: rateLimited('mutations', waitMs) };
    // OPERATION_MIN_COST was paid on arrival (admitOperation); the rest of the estimate now.
    const rest = Math.max(0, cost - OPERATION_MIN_COST);
    return thenIfPromise(rest > 0 ? options.queryCostLimiter.take(key, rest) : 0, (costWaitMs) =>
      costWaitMs > 0
        ? { fields, cost, error: rateLimited('queries (their estimated cost)', costWaitMs) }
        : checkRoles(fields, cost, operation, principal, dryRunOnlyFields(options.schema, document, operation, variables)),
    );
  };
  // Synchronous unless a limiter is not (the shared one on PostgreSQL): an operation that needs no round trip does
  // not give the event loop a turn in the middle of graphql-ws's onSubscribe.
  return operation.operation === 'mutation' ? thenIfPromise(options.mutationLimiter.take(key), afterMutationLimit) : afterMutationLimit(0);
}

/**
 * The least an event sent to a subscription costs, replayed or live, whatever the operation's estimate: executing a
 * payload, serializing it and writing its frame is work of ~10 units at the ~1.1 µs per unit measured on real pages,
 * and at the estimate of `events { id }` (1–2) a viewer's distinct cheap subscriptions got 25–50× more work per unit
 * than queries do (issue 34, attack 12, F3: 12.7k executions a second, /healthz p99 363 ms).
 */
export const EVENT_MIN_COST = 10;

/**
 * What events sent to a subscription cost the caller: the operation's cost per event (at least EVENT_MIN_COST), from
 * the same budget as its queries (issue 34, finding 2) — its replays (`after:`), paced by it (EventLog.ReplayCharge),
 * and its share of each live execution (fanOut.ts).
 */
export function replayCharge(options: GuardOptions, principal: Principal, costPerEvent: number): ReplayCharge {
  const key = callerKey(principal);
  return (events) => options.queryCostLimiter.take(key, Math.max(EVENT_MIN_COST, costPerEvent) * events);
}

function thenIfPromise<T, R>(value: T | Promise<T>, next: (value: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

function checkRoles(fields: string[], cost: number, operation: OperationDefinitionNode, principal: Principal, dryRunOnly: ReadonlySet<string>): GuardVerdict {
  for (const field of fields) {
    const needed = requiredRole(operation.operation, field, dryRunOnly.has(field));
    if (!roleAllows(principal.role, needed)) {
      const error = new GraphQLError(`${field} needs the ${needed} role; token "${principalName(principal)}" has ${principal.role}`, {
        // 200, as for any GraphQL error about what the caller may do (Apollo would answer 500 for a plugin error).
        extensions: { code: ErrorCode.Forbidden, needed, role: principal.role, field, http: { status: 200 } },
      });
      return { fields, cost, error };
    }
  }
  return { fields, cost };
}
