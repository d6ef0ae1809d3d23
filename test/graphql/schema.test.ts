import { describe, expect, it } from 'vitest';
import { buildSchema as buildSdlOnly, isEnumType, isInputObjectType, isObjectType, isScalarType, isSpecifiedScalarType, isIntrospectionType } from 'graphql';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { buildSchema, loadTypeDefs } from '../../src/graphql/schema.js';
import { resolversWith } from '../../src/graphql/resolvers/index.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

const resolvers = resolversWith(ROLLOUT_KIND_MODULES);

describe('schema.graphql and the resolvers', () => {
  const sdl = buildSdlOnly(loadTypeDefs());

  it('builds, with no resolver for a field the schema lacks', () => {
    expect(() => buildSchema(ROLLOUT_KIND_MODULES)).not.toThrow();
  });

  it('has a resolver for every query, mutation and subscription field', () => {
    for (const rootName of ['Query', 'Mutation', 'Subscription'] as const) {
      const root = sdl.getType(rootName);
      if (!isObjectType(root)) throw new Error(`${rootName} missing`);
      const implemented = Object.keys((resolvers as Record<string, object>)[rootName] ?? {});
      expect(implemented.sort(), rootName).toEqual(Object.keys(root.getFields()).sort());
    }
  });

  it('fails to build when a resolver names a field the schema does not have', () => {
    expect(() =>
      makeExecutableSchema({
        typeDefs: loadTypeDefs(),
        resolvers: { ...resolvers, Query: { ...(resolvers as any).Query, noSuchQuery: () => 1 } },
        resolverValidationOptions: { requireResolversToMatchSchema: 'error' },
      }),
    ).toThrow(/noSuchQuery/);
  });

  it('documents every type, field, argument, input field and enum value', () => {
    const undocumented: string[] = [];
    const connectionPlumbing = /(Connection|Edge)$/;
    for (const type of Object.values(sdl.getTypeMap())) {
      if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
      // Relay plumbing (XConnection, XEdge) is documented once, on PageInfo and in the schema description.
      if (connectionPlumbing.test(type.name)) continue;
      if (!type.description && !['Query', 'Mutation', 'Subscription'].includes(type.name)) undocumented.push(type.name);
      if (isObjectType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description && !selfExplanatory(field.name)) undocumented.push(`${type.name}.${field.name}`);
          if ('args' in field) {
            for (const arg of field.args) if (!arg.description && !selfExplanatoryArg(arg.name)) undocumented.push(`${type.name}.${field.name}(${arg.name})`);
          }
        }
      }
      if (isEnumType(type)) {
        for (const value of type.getValues()) if (!value.description && !isScalarType(type)) undocumented.push(`${type.name}.${value.name}`);
      }
    }
    expect(undocumented).toEqual([]);
  });
});

/** Names whose meaning the schema description defines once for all types (ids, names, timestamps, pagination). */
function selfExplanatory(name: string): boolean {
  return ['id', 'namespace', 'name', 'createdAt', 'updatedAt', 'startedAt', 'finishedAt', 'cursor', 'node', 'edges', 'pageInfo', 'totalCount'].includes(name);
}

function selfExplanatoryArg(name: string): boolean {
  return ['first', 'after', 'id', 'namespace', 'name', 'filter', 'input'].includes(name);
}
