import { execute, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/roles.js';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

/**
 * The schema itself refuses a root field the caller's role does not allow, and oversized inputs, with no guard in
 * front of it: the backstop that makes a gap in the request guard harmless.
 */
const schema = buildSchema(ROLLOUT_KIND_MODULES);
const viewer: Principal = { kind: 'token', tokenId: 't1', name: 'wall', role: 'viewer', expiresAt: null };
let touched = false;
const domain = new Proxy(
  {},
  {
    get: () => {
      touched = true;
      throw new Error('the domain must not be reached');
    },
  },
);
const contextOf = (principal: Principal) => ({ principal, domain, logger: console, sourceAddress: null }) as unknown as GraphQLContext;

describe('the root-field policy without the guard', () => {
  it.each([
    ['mutation { ... on Mutation { createApiToken(input: { name: "x", role: admin }) { secret } } }'],
    ['mutation { ...M } fragment M on Mutation { pauseRollout(id: "ro_1") { id } }'],
    ['query { ... { apiTokens { edges { node { id } } } } }'],
  ])('refuses %s for a viewer before the domain is reached', async (query) => {
    touched = false;
    const result = await execute({ schema, document: parse(query), contextValue: contextOf(viewer) });
    expect(result.errors?.[0]?.originalError).toMatchObject({ code: 'FORBIDDEN' });
    expect(touched).toBe(false);
  });

  it('refuses an oversized input before the domain is reached', async () => {
    touched = false;
    const admin: Principal = { kind: 'anonymous', role: 'admin' };
    const result = await execute({
      schema,
      document: parse(`mutation { abortRollout(id: "ro_1", reason: "${'r'.repeat(501)}") { id } }`),
      contextValue: contextOf(admin),
    });
    expect(result.errors?.[0]?.originalError).toMatchObject({ code: 'BAD_USER_INPUT', details: { field: 'reason' } });
    expect(touched).toBe(false);
  });
});
