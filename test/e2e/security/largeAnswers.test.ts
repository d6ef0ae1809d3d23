import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { untypedEvent } from '../../helpers/events.js';

/**
 * Issue 34, attack 11, F2: the cost estimate counts fields, not bytes. Selectors of 900 names of 253 characters
 * (237 KB a rollout) and a ClusterVersion spec of 235 KB, asked for 29 times under aliases by a viewer (cost ~30), ran
 * the process out of memory while the answer was serialized.
 */
describe('large answers', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1' } });
    // Twenty events whose payloads are 250 KB each (rollplane writes none that large; the store takes them).
    for (let i = 0; i < 20; i++) {
      await app.domain.events.append(untypedEvent({ type: EventType.AgentRecreated, name: `big-${i}`, payload: { note: `${i}`.padEnd(250_000, 'z') } }));
    }
  });
  afterAll(async () => {
    await app?.close();
  });

  it('refuses to keep a rollout whose selector is larger than 64 Ki characters, before anything is written', async () => {
    // One pool, then valid DNS subdomains of 253 characters (labels of at most 63) naming none, as the attacker sent.
    const label = 'n'.repeat(60);
    const names = ['net-1', ...Array.from({ length: 899 }, (_, i) => `${String(i).padStart(3, '0')}${label}.${label}.${label}.${label}`.slice(0, 253))];
    const res = await gql(app.url, 'mutation($names: [String!]) { bumpAgentImage(input: { image: "a/agent:v9", pools: { names: $names } }) { created } }', {
      names,
    });
    expect(res.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'input' } });
    expect(res.errors?.[0]?.message).toMatch(/at most 65536 are kept with a rollout/);
    expect((await gql(app.url, '{ rollouts { totalCount } }')).data.rollouts.totalCount).toBe(0);
  });

  it('answers a cheap query whose answer would pass 4 MiB with an error in its place, and keeps serving', async () => {
    const aliases = Array.from({ length: 3 }, (_, i) => `a${i}: events(first: 20) { edges { node { payload } } }`).join(' ');
    const res = await gql(app.url, `{ ${aliases} }`);
    expect(res.data).toBeUndefined();
    expect(res.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', limit: 'responseBytes' }) })]);
    // One copy of the page (5 MB) is over the limit too; a smaller page is answered.
    const small = await gql(app.url, '{ events(first: 10) { edges { node { id object { name } } } } }');
    expect(small.errors).toBeUndefined();
    expect(small.data.events.edges).toHaveLength(10);
  });
});
