import {
  getNamedType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { requiredRole } from '../../src/auth/policy.js';
import { ROLES, roleAllows, type Role } from '../../src/auth/roles.js';

export type OperationType = 'query' | 'mutation' | 'subscription';

/** One request that asks for a root field the caller's role does not allow, in some shape. */
export interface PrivilegedCase {
  name: string;
  type: OperationType;
  field: string;
  needed: Role;
  role: Role;
  query: string;
  variables?: Record<string, unknown>;
}

/** A literal for an input type: the last enum value (for Role that is `admin`, the worst case), required fields only. */
function literal(type: GraphQLInputType): string {
  if (isNonNullType(type)) return literal(type.ofType);
  if (isListType(type)) return `[${literal(type.ofType)}]`;
  if (isEnumType(type)) return type.getValues().at(-1)!.name;
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields()).filter((f) => isNonNullType(f.type) && f.defaultValue === undefined);
    return `{ ${fields.map((f) => `${f.name}: ${literal(f.type)}`).join(', ')} }`;
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'Int':
      case 'Float':
        return '1';
      case 'Boolean':
        return 'false';
      case 'DateTime':
        return '"2026-01-01T00:00:00Z"';
      case 'JSON':
        return '{}';
      default:
        return '"x"';
    }
  }
  return '"x"';
}

/** `field(requiredArgs) { __typename }`, valid for any field. */
export function selectionFor(field: GraphQLField<unknown, unknown>): string {
  const args = field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
  const argText = args.length ? `(${args.map((a) => `${a.name}: ${literal(a.type)}`).join(', ')})` : '';
  return `${field.name}${argText}${isCompositeType(getNamedType(field.type)) ? ' { __typename }' : ''}`;
}

/**
 * Every root field of the schema that some role may not use, wrapped in every request shape that once slipped past a
 * guard reading only the fields written directly in the operation: inline fragments with and without a type
 * condition, named fragments, fragments nested in fragments, aliases, and @include/@skip driven by a variable.
 * Generated from the schema, so a field added tomorrow is covered by the same tests.
 */
export function privilegedCases(schema: GraphQLSchema): PrivilegedCase[] {
  const cases: PrivilegedCase[] = [];
  const roots: [OperationType, ReturnType<GraphQLSchema['getQueryType']>][] = [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ];
  for (const [type, root] of roots) {
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      const needed = requiredRole(type, field.name);
      const sel = selectionFor(field);
      const R = root.name;
      const shapes: [string, string, Record<string, unknown>?][] = [
        ['inline fragment', `${type} { ... on ${R} { ${sel} } }`],
        ['inline fragment without a type', `${type} { ... { ${sel} } }`],
        ['named fragment', `${type} { ...F } fragment F on ${R} { ${sel} }`],
        ['nested fragments', `${type} { ... on ${R} { ...F } } fragment F on ${R} { ... { ...G } } fragment G on ${R} { innocent: ${sel} }`],
        ['alias', `${type} { a1: ${sel} }`],
        ['@include from a variable', `${type}($go: Boolean!) { ... on ${R} @include(if: $go) { ${sel} } }`, { go: true }],
        ['@skip from a variable', `${type}($no: Boolean!) { ...F @skip(if: $no) } fragment F on ${R} { ${sel} }`, { no: false }],
      ];
      for (const role of ROLES) {
        if (roleAllows(role, needed)) continue;
        for (const [shape, query, variables] of shapes) {
          cases.push({ name: `${role} → ${field.name} (${shape})`, type, field: field.name, needed, role, query, ...(variables ? { variables } : {}) });
        }
      }
    }
  }
  return cases;
}
