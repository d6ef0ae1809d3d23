import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { AuditLog } from '../domain/AuditLog.js';
import type { Logger } from '../log.js';
import type { GraphQLContext } from './context.js';
import { guardOperation, type GuardOptions } from './guard.js';
import { auditMutation, auditUnresolvedMutation } from './operationAudit.js';
import { rootFieldsOf } from './operationFields.js';

/** The guard and the audit log for GraphQL over HTTP (the WebSocket server calls the same two functions). */
export function guardPlugin(options: GuardOptions & { audit: AuditLog; logger: Logger }): ApolloServerPlugin<GraphQLContext> {
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
          const verdict = await guardOperation(options, rc.document, rc.operation, rc.request.variables, rc.contextValue.principal);
          if (verdict.error) throw verdict.error;
        },
        async willSendResponse(rc) {
          if (!rc.document) return; // not even parsed: nothing says it was a mutation
          if (!rc.operation) {
            // Parsed but invalid, or no operation could be chosen: audited when it names mutations.
            await auditUnresolvedMutation(
              options.audit,
              options.mutationLimiter,
              {
                document: rc.document,
                operationName: rc.request.operationName,
                principal: rc.contextValue.principal,
                sourceAddress: rc.contextValue.sourceAddress,
                source: rc.source ?? rc.request.query ?? '',
                variables: rc.request.variables,
                errors: rc.errors ?? [],
              },
              options.logger,
            );
            return;
          }
          await auditMutation(
            options.audit,
            {
              principal: rc.contextValue.principal,
              sourceAddress: rc.contextValue.sourceAddress,
              operation: rc.operation,
              fields: rootFieldsOf(rc.document, rc.operation),
              source: rc.source ?? rc.request.query ?? '',
              variables: rc.request.variables,
              errors: rc.errors ?? [],
            },
            options.logger,
          );
        },
      };
    },
  };
}
