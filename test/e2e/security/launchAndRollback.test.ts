/**
 * Issue 34, findings 4–7: a launch or a rollback is all-or-nothing, and idempotency keys cannot be turned against
 * another caller's rollout or the engine's own rollback. Each case sends the attack's request shape; each fails on the
 * code before the fix (noted per case).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seedRollout, startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from '../agentPool/rig.js';

const ROLLBACK = `mutation($id: ID!, $input: RollbackInput) { rollbackRollout(id: $id, input: $input) { id state rollbackOf { id } } }`;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** The tests poll rollouts until they end: a budget no poll can exhaust (the limits are tested elsewhere). */
const UNLIMITED_QUERIES = { ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000', ROLLPLANE_QUERY_COST_BURST: '1000000000' };

/** The GraphQL errors of a refused call (rig.gql throws them). */
async function refusal(call: Promise<unknown>): Promise<{ message: string; extensions?: { code?: string } }> {
  const error = (await call.then(
    () => undefined,
    (e: { errors?: { message: string; extensions?: { code?: string } }[] }) => e,
  )) as { errors?: { message: string; extensions?: { code?: string } }[] } | undefined;
  expect(error?.errors?.[0], 'the call was refused').toBeDefined();
  return error!.errors![0]!;
}

async function stateOf(r: Rig, id: string): Promise<string> {
  return (await r.gql(`{ rollout(id: "${id}") { state } }`)).rollout.state;
}

describe('a refused rollback', () => {
  it('(finding 4) leaves its original running: a key already used for another request is CONFLICT and nothing was aborted', async () => {
    rig = await startRig({ fleet: 'pools=4,nodes=2', delays: { podReadyMs: 20, podTerminateMs: 10 }, env: UNLIMITED_QUERIES });
    const r = rig;
    // A bump made under the key first; then a rollout paused at its canary, whose rollback reuses that key.
    const keyed = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-4'] }, idempotencyKey: 'ci:run-7' } });
    await waitForRollout(r, keyed.bumpAgentImage.rollout.id, ['SUCCEEDED']);
    const bump = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1', 'net-2', 'net-3'] }, strategy: { canary: 1, maxUnavailable: '1' } } });
    const id = bump.bumpAgentImage.rollout.id;
    await waitForRollout(r, id, ['PAUSED']);
    const refused = await refusal(r.gql(ROLLBACK, { id, input: { idempotencyKey: 'ci:run-7' } }));
    expect(refused.extensions?.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/idempotency key "ci:run-7" was already used for a different request/);
    // Before the fix the original was ABORTED here, its pending pools cancelled, though no rollback started.
    expect(await stateOf(r, id)).toBe('PAUSED');
    expect((await r.gql('{ rollouts(first: 10) { totalCount } }')).rollouts.totalCount).toBe(2);
    // And it still runs to the end when resumed.
    await r.gql(`mutation { resumeRollout(id: "${id}") { state } }`);
    expect((await waitForRollout(r, id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
  });

  it('(finding 4) leaves its original running when it changed no target yet', async () => {
    // No controllers: the seeded rollout stays PENDING with nothing admitted, deterministically.
    const app = await startTestApp();
    try {
      const id = await seedRollout(app);
      const refused = await gql(app.url, ROLLBACK, { id });
      expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'CONFLICT' } });
      expect(refused.errors?.[0]?.message).toMatch(/changed no target/);
      // Before the fix it was ABORTED first, then refused.
      expect((await gql(app.url, `{ rollout(id: "${id}") { state } }`)).data.rollout.state).toBe('PENDING');
    } finally {
      await app.close();
    }
  });
});

describe('a retried rollback', () => {
  it('(finding 6) returns the same rollback under its key once it succeeded, although the original is ROLLED_BACK', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2', delays: { podReadyMs: 20, podTerminateMs: 10 }, env: UNLIMITED_QUERIES });
    const r = rig;
    const bump = await r.gql(BUMP, { input: { image: NEW } });
    const id = bump.bumpAgentImage.rollout.id;
    await waitForRollout(r, id, ['SUCCEEDED']);
    const first = (await r.gql(ROLLBACK, { id, input: { idempotencyKey: 'rollback-1' } })).rollbackRollout;
    expect(first.rollbackOf.id).toBe(id);
    await waitForRollout(r, first.id, ['SUCCEEDED']);
    await r.waitFor('the original ROLLED_BACK', async () => (await stateOf(r, id)) === 'ROLLED_BACK');
    // Before the fix: CONFLICT "rollout … is already rolled back".
    const retry = (await r.gql(ROLLBACK, { id, input: { idempotencyKey: 'rollback-1' } })).rollbackRollout;
    expect(retry.id).toBe(first.id);
    // Without a key, or with another one, a second rollback of a rolled-back rollout is still refused.
    expect((await refusal(r.gql(ROLLBACK, { id, input: { idempotencyKey: 'rollback-2' } }))).message).toMatch(/already rolled back/);
    for (const pool of ['net-1', 'net-2']) expect(r.agent(pool)!.spec.containers[0].image).toBe(OLD);
  });
});

describe("the engine's own idempotency keys", () => {
  it('(finding 5) cannot be claimed by a caller: a rollout made with "auto-rollback:<id>" does not switch off that rollout\'s automatic rollback', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=2', delays: { podReadyMs: 20, podTerminateMs: 10 }, env: UNLIMITED_QUERIES });
    const r = rig;
    const bad = 'rancher/harvester-vm-dhcp-agent:bad-1';
    const bump = await r.gql(BUMP, {
      input: { image: bad, pools: { names: ['net-1', 'net-2'] }, strategy: { maxUnavailable: '1', failureThreshold: 1, autoRollback: true } },
    });
    const id = bump.bumpAgentImage.rollout.id;
    // The attacker's rollout, made under the key the engine will use for the automatic rollback.
    const claim = await r.gql(BUMP, { input: { image: bad, pools: { names: ['net-3'] }, idempotencyKey: `auto-rollback:${id}` } });
    expect(claim.bumpAgentImage.created).toBe(true);
    // Before the fix the rollout stayed FAILED and its pool on the bad image: the engine's rollback hit the claimed key.
    await waitForRollout(r, id, ['ROLLED_BACK'], 60_000);
    const rollbacks = (await r.gql('{ rollouts(first: 10) { edges { node { id rollbackOf { id } idempotencyKey cause { actor } } } } }')).rollouts.edges
      .map((e: { node: unknown }) => e.node)
      .filter((ro: { rollbackOf: { id: string } | null }) => ro.rollbackOf?.id === id);
    expect(rollbacks).toEqual([expect.objectContaining({ idempotencyKey: `auto-rollback:${id}`, cause: { actor: 'rollplane' } })]);
  });
});

describe('idempotency keys of callers (finding 7)', () => {
  const ADMIN = 'admin-secret-for-idempotency-scopes-0123456789';
  let app: TestApp;
  let alice: string;
  let mallory: string;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_SIM_FLEET: 'pools=4,nodes=2' } });
    alice = (await app.domain.tokens.create({ name: 'ci-alice', role: 'deployer' })).secret;
    mallory = (await app.domain.tokens.create({ name: 'mallory', role: 'deployer' })).secret;
  });
  afterAll(async () => {
    await app?.close();
  });
  const bump = async (token: string, pool: string, key: string) => {
    const res = await gql(app.url, BUMP, { input: { image: NEW, pools: { names: [pool] }, idempotencyKey: key } }, { authorization: `Bearer ${token}` });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    return res.data.bumpAgentImage as { created: boolean; rollout: { id: string } };
  };

  it("are the caller's own: another deployer cannot pre-claim a CI pipeline's next key", async () => {
    // Mallory guesses the CLI's default key of Alice's next CI step and uses it first, for another pool.
    const key = 'github:acme/infra:1234:deploy:bump:agent-pool';
    const claimed = await bump(mallory, 'net-2', key);
    expect(claimed.created).toBe(true);
    // Before the fix Alice's bump was answered with Mallory's rollout (created: false) or CONFLICT.
    const mine = await bump(alice, 'net-1', key);
    expect(mine.created).toBe(true);
    expect(mine.rollout.id).not.toBe(claimed.rollout.id);
    // A retry is still a retry, per caller.
    expect(await bump(alice, 'net-1', key)).toEqual({ ...mine, created: false });
    expect((await bump(mallory, 'net-2', key)).rollout.id).toBe(claimed.rollout.id);
  });
});
