import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';

function parseDate(value: unknown): Date {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    throw new GraphQLError(`DateTime must be an ISO 8601 date-time with a zone, e.g. 2026-11-30T06:26:16Z (got ${JSON.stringify(value)?.slice(0, 60)})`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  const date = new Date(value);
  // JavaScript rolls impossible dates over (Feb 31 → Mar 3); refuse them instead.
  const [, y, m, d] = /^(\d{4})-(\d{2})-(\d{2})/.exec(value)!;
  const calendar = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (Number.isNaN(date.getTime()) || calendar.getUTCMonth() !== Number(m) - 1 || calendar.getUTCDate() !== Number(d)) {
    throw new GraphQLError(`DateTime is not a real instant: ${value}`, { extensions: { code: 'BAD_USER_INPUT' } });
  }
  // The stores keep four-digit years in UTC: PostgreSQL refuses year 0 and an ISO string of year 10000 ("+010000-…").
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) {
    throw new GraphQLError(`DateTime must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z in UTC (got ${value})`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return date;
}

export const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize(value) {
    const date = value instanceof Date ? value : new Date(value as string | number);
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime cannot represent an invalid date');
    return date.toISOString();
  },
  parseValue: parseDate,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string', { extensions: { code: 'BAD_USER_INPUT' } });
    return parseDate(ast.value);
  },
});

function literalToJson(ast: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
    case Kind.ENUM:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map((v) => literalToJson(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalToJson(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
  }
}

export const JSONScalar = new GraphQLScalarType<unknown, unknown>({
  name: 'JSON',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => literalToJson(ast, variables),
});
