import { defaultFieldResolver, type GraphQLField, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLSchema } from 'graphql';

type OperationType = 'query' | 'mutation' | 'subscription';
import { isDryRun, requiredRole } from '../auth/policy.js';
import { principalName, roleAllows } from '../auth/roles.js';
import { ForbiddenError } from '../errors.js';
import type { GraphQLContext } from './context.js';
import { checkInputLimits } from './inputLimits.js';
import { offersDryRun } from './operationFields.js';

/**
 * Wraps every root field of the schema (queries and mutations: `resolve`; subscriptions: `subscribe`) with the role
 * check and the input limits, so that they hold however a request is shaped or transported. The guard
 * (guard.ts) refuses the same operations earlier, before anything runs; this is the backstop that makes a gap in the
 * guard harmless rather than a privilege escalation.
 */
export function enforceRootFieldPolicy(schema: GraphQLSchema): GraphQLSchema {
  const roots: [OperationType, GraphQLObjectType | null | undefined][] = [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ];
  for (const [operation, type] of roots) {
    if (!type) continue;
    for (const field of Object.values(type.getFields())) {
      if (operation === 'subscription') field.subscribe = guarded(operation, field, field.subscribe ?? defaultFieldResolver);
      else field.resolve = guarded(operation, field, field.resolve ?? defaultFieldResolver);
    }
  }
  return schema;
}

function guarded(
  operation: OperationType,
  field: GraphQLField<unknown, GraphQLContext>,
  inner: GraphQLFieldResolver<unknown, GraphQLContext>,
): GraphQLFieldResolver<unknown, GraphQLContext> {
  const dryRunnable = offersDryRun(field);
  return (source, args: Record<string, unknown>, context, info) => {
    const needed = requiredRole(operation, field.name, dryRunnable && isDryRun(args));
    const principal = context.principal;
    if (!roleAllows(principal.role, needed)) {
      throw new ForbiddenError(`${field.name} needs the ${needed} role; token "${principalName(principal)}" has ${principal.role}`, {
        details: { needed, role: principal.role, field: field.name },
      });
    }
    checkInputLimits(field.name, field.args, args);
    return inner(source, args, context, info);
  };
}
