import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { AuditLog } from '../domain/AuditLog.js';
import type { Logger } from '../log.js';
import type { GraphQLContext } from './context.js';
import { clientErrorOf } from './errors.js';
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
          let verdict: Awaited<ReturnType<typeof guardOperation>>;
          try {
            verdict = await guardOperation(options, rc.document, rc.operation, rc.request.variables, rc.contextValue.principal);
          } catch (error) {
            // A limit that could not be checked (PostgreSQL's shared rate limit while the database is down): the
            // client's error (UNAVAILABLE), as a GraphQL error — Apollo answers 500 for anything else a plugin throws.
            const clientError = clientErrorOf(error);
            if (!clientError) throw error;
            throw new GraphQLError(clientError.message, { extensions: { ...clientError.details, code: clientError.code, http: { status: 200 } } });
          }
          if (verdict.error) throw verdict.error;
        },
        async willSendResponse(rc) {
          if (!rc.document) return; // not even parsed: nothing says it was a mutation
          if (!rc.operation) {
            // Parsed but invalid, or no operation could be chosen: audited when it names mutations.
            await auditUnresolvedMutation(
              options.audit,
              options.schema,
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
            options.schema,
            {
              principal: rc.contextValue.principal,
              sourceAddress: rc.contextValue.sourceAddress,
              document: rc.document,
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
