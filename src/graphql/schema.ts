import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import type { GraphQLContext } from './context.js';
import type { KindApi } from './kindApi.js';
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
 * Builds the executable schema with the registered kinds' parts of the API (their modules, `ROLLOUT_KIND_MODULES` of
 * src/kinds, given by the composition root). Resolvers for fields the SDL does not declare are an error at start-up, and a test checks the
 * other direction (every root field has a resolver).
 */
export function buildSchema(kinds: readonly KindApi[]): GraphQLSchema {
  const schema = makeExecutableSchema<GraphQLContext>({
    typeDefs: loadTypeDefs(),
    resolvers: resolversWith(kinds),
    resolverValidationOptions: { requireResolversToMatchSchema: 'error' },
  });
  // Role checks and input limits on every root field, whatever the request's shape or transport.
  return enforceRootFieldPolicy(schema);
}
