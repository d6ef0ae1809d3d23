import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestContext } from '@apollo/server';
import { getOperationAST, GraphQLError, Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { MutationRateLimiter } from '../auth/MutationRateLimiter.js';
import { requiredRole } from '../auth/policy.js';
import { principalName, roleAllows, type Principal } from '../auth/roles.js';
import type { AuditLog } from '../domain/AuditLog.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { GraphQLContext } from './context.js';
import { checkQueryLimits, type QueryLimits } from './queryLimits.js';

export interface GuardOptions {
  schema: GraphQLSchema;
  limits: QueryLimits;
  audit: AuditLog;
  rateLimiter: MutationRateLimiter;
  logger: Logger;
}

function rootFields(operation: OperationDefinitionNode): string[] {
  return operation.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []));
}

/**
 * Checks one operation before it executes: query limits, the caller's role for every root field, and (mutations) the
 * caller's rate limit. Shared by HTTP (Apollo plugin) and WebSocket (graphql-ws onSubscribe). Nothing has run yet when
 * it refuses, so a refused request changes nothing.
 */
export function guardOperation(
  options: Pick<GuardOptions, 'schema' | 'limits' | 'rateLimiter'>,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  principal: Principal,
  sourceAddress: string | null,
): GraphQLError | undefined {
  const limitError = checkQueryLimits(options.schema, document, operation, variables, options.limits);
  if (limitError) return limitError;
  for (const field of rootFields(operation)) {
    if (field === '__typename' || field === '__schema' || field === '__type') continue;
    const needed = requiredRole(operation.operation, field);
    if (!roleAllows(principal.role, needed)) {
      return new GraphQLError(`${field} needs the ${needed} role; token "${principalName(principal)}" has ${principal.role}`, {
        // 200, as for any GraphQL error about what the caller may do (Apollo would answer 500 for a plugin error).
        extensions: { code: ErrorCode.Forbidden, needed, role: principal.role, http: { status: 200 } },
      });
    }
  }
  if (operation.operation === 'mutation') {
    const key = principal.kind === 'token' ? `token:${principal.tokenId}` : `addr:${sourceAddress ?? 'unknown'}`;
    const waitMs = options.rateLimiter.take(key);
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      return new GraphQLError(`too many mutations; retry in ${seconds}s`, {
        extensions: { code: ErrorCode.RateLimited, retryAfterSeconds: seconds, http: { status: 429, headers: new HeaderMap([['retry-after', String(seconds)]]) } },
      });
    }
  }
  return undefined;
}

/** The guard and the audit log as an Apollo plugin. */
export function guardPlugin(options: GuardOptions): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation(rc) {
          if (!rc.operation) return;
          if (rc.operation.operation === 'subscription') {
            throw new GraphQLError('subscriptions are served over WebSocket (graphql-ws, protocol graphql-transport-ws) on this same path', {
              extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
            });
          }
          const error = guardOperation(options, rc.document, rc.operation, rc.request.variables, rc.contextValue.principal, rc.contextValue.sourceAddress);
          if (error) throw error;
        },
        async willSendResponse(rc) {
          await auditMutation(options, rc).catch((error: unknown) => options.logger.error({ err: error }, 'could not write the audit entry'));
        },
      };
    },
  };
}

async function auditMutation(options: GuardOptions, rc: GraphQLRequestContext<GraphQLContext>): Promise<void> {
  const operation = rc.operation ?? (rc.document ? getOperationAST(rc.document, rc.request.operationName) : null);
  if (!operation || operation.operation !== 'mutation') return;
  const errors = rc.errors ?? [];
  const first = errors[0];
  const result = first ? String(first.extensions?.code ?? ErrorCode.Internal) : 'OK';
  const principal = rc.contextValue.principal;
  await options.audit.record({
    actor: principalName(principal),
    role: principal.role,
    operation: rootFields(operation).join(',') || (operation.name?.value ?? 'mutation'),
    // The operation text carries inline arguments; variables carry the rest.
    input: { operation: (rc.source ?? rc.request.query ?? '').slice(0, 4000), variables: rc.request.variables ?? {} },
    result,
    message: first?.message ?? null,
    sourceAddr: rc.contextValue.sourceAddress,
  });
}
