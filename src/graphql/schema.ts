import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import type { GraphQLContext } from './context.js';
import type { Resolvers } from './generated/resolvers.js';
import { resolversWith } from './resolvers/index.js';
import { enforceRootFieldPolicy } from './rootFieldPolicy.js';
import { projectPath } from '../util/projectRoot.js';

/** `schema.graphql` at the project root is the contract; the server loads it, it is never generated from code. */
export function schemaPath(): string {
  return projectPath('schema.graphql');
}

export function loadTypeDefs(): string {
  return readFileSync(schemaPath(), 'utf8');
}

/**
 * Builds the executable schema with the registered kinds' resolvers (`KIND_RESOLVERS` of src/kinds, given by the
 * composition root). Resolvers for fields the SDL does not declare are an error at start-up, and a test checks the
 * other direction (every root field has a resolver).
 */
export function buildSchema(kindResolvers: readonly Resolvers[]): GraphQLSchema {
  const schema = makeExecutableSchema<GraphQLContext>({
    typeDefs: loadTypeDefs(),
    resolvers: resolversWith(kindResolvers),
    resolverValidationOptions: { requireResolversToMatchSchema: 'error' },
  });
  // Role checks and input limits on every root field, whatever the request's shape or transport.
  return enforceRootFieldPolicy(schema);
}
