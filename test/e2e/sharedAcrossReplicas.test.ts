import { afterAll, beforeAll, expect, it } from 'vitest';
import { BUMP, FAST_ENV, NEW, startRig, type Rig } from './agentPool/rig.js';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

/**
 * What must be shared across replicas (issue 15), with three server processes on one PostgreSQL and one simulator:
 * idempotency keys, the per-token mutation rate limit, and token revocation.
 */
const ADMIN = 'rp_admin-secret-for-the-shared-replicas-test-0123456789';
const BURST = 60;
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
/** Newer than NEW, which the first test rolls out. */
const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';

describeWithPostgres('three replica processes on one PostgreSQL', (server) => {
  let rig: Rig;
  const replicas: ServiceProcess[] = [];
  let urls: string[] = [];

  beforeAll(async () => {
    const url = await server().createDatabase();
    rig = await startRig({ noApp: true, fleet: 'pools=3,nodes=2', delays: { podReadyMs: 10, podTerminateMs: 5 } });
    const env = {
      ...FAST_ENV,
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      ROLLPLANE_KUBE: 'kubeconfig',
      KUBECONFIG: rig.sim.kubeconfigPath,
      ROLLPLANE_AUTH: 'on',
      ROLLPLANE_ADMIN_TOKEN: ADMIN,
      // 60 mutations per token, refilled at one a minute: nothing worth a mutation refills while the test runs.
      ROLLPLANE_MUTATIONS_PER_MINUTE: '1',
      ROLLPLANE_MUTATION_BURST: String(BURST),
    };
    // One replica runs the controllers (no leader election here); the other two serve the API only. All three start at
    // once: migrations and the admin token are set up by whichever gets there first.
    const started = await Promise.allSettled([
      startService(env, 180_000),
      startService({ ...env, ROLLPLANE_CONTROLLERS: 'off' }, 180_000),
      startService({ ...env, ROLLPLANE_CONTROLLERS: 'off' }, 180_000),
    ]);
    for (const s of started) if (s.status === 'fulfilled') replicas.push(s.value);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    urls = replicas.map((r) => r.url);
  }, 240_000);

  afterAll(async () => {
    for (const replica of replicas) {
      replica.child.kill('SIGTERM');
      await replica.exited;
    }
    await rig?.close();
  });

  const newToken = async (name: string, role: string) => {
    const res = await gql(
      urls[0]!,
      `mutation($name: String!, $role: Role!) { createApiToken(input: { name: $name, role: $role }) { secret token { id } } }`,
      { name, role },
      bearer(ADMIN),
    );
    expect(res.errors).toBeUndefined();
    return { secret: res.data.createApiToken.secret as string, id: res.data.createApiToken.token.id as string };
  };

  it('makes one rollout of 50 identical mutations spread over the three replicas', async () => {
    const ci = await newToken('ci', 'deployer');
    const input = { image: NEW, strategy: { maxUnavailable: '100%' }, cause: { actor: 'ci' }, idempotencyKey: 'shared-replicas-1' };
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await gql(urls[i % 3]!, BUMP, { input }, bearer(ci.secret));
        expect(res.errors).toBeUndefined();
        return res.data.bumpAgentImage;
      }),
    );
    const ids = new Set(answers.map((a) => a.rollout.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    const id = [...ids][0]!;
    // Each replica lists exactly that one rollout, and the controllers' replica runs it to the end.
    for (const url of urls) {
      const res = await gql(url, `{ rollouts(first: 10) { totalCount edges { node { id } } } }`, {}, bearer(ci.secret));
      expect(res.data.rollouts).toEqual({ totalCount: 1, edges: [{ node: { id } }] });
    }
    const done = await until(
      'the rollout to end',
      async () => {
        const res = await gql(urls[2]!, `query($id: ID!) { rollout(id: $id) { state progress { succeeded } } }`, { id }, bearer(ci.secret));
        return ['SUCCEEDED', 'FAILED', 'ABORTED'].includes(res.data?.rollout?.state) && res.data.rollout;
      },
      60_000,
    );
    expect(done).toEqual({ state: 'SUCCEEDED', progress: { succeeded: 3 } });
    // A different request under the same key is refused on any replica, naming the rollout the key made.
    const other = await gql(urls[1]!, BUMP, { input: { ...input, strategy: { maxUnavailable: '1' } } }, bearer(ci.secret));
    expect(other.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  }, 120_000);

  it('grants a token exactly its mutation budget across all replicas together', async () => {
    const limited = await newToken('limited', 'deployer');
    const input = { image: NEW, cause: { actor: 'ci' }, dryRun: true };
    const codes = await Promise.all(
      Array.from({ length: BURST + 30 }, async (_, i) => {
        const res = await gql(urls[i % 3]!, BUMP, { input }, bearer(limited.secret));
        return res.errors?.[0]?.extensions?.code ?? 'OK';
      }),
    );
    expect(codes.filter((c) => c === 'OK')).toHaveLength(BURST);
    expect(codes.filter((c) => c === 'RATE_LIMITED')).toHaveLength(30);
    // Another token's budget is its own.
    const other = await newToken('other', 'deployer');
    expect((await gql(urls[2]!, BUMP, { input }, bearer(other.secret))).errors).toBeUndefined();
  }, 120_000);

  it("closes a revoked token's subscriptions on every replica and refuses it everywhere", async () => {
    const watcher = await newToken('watcher', 'viewer');
    const clients = [urls[1]!, urls[2]!].map((url) => wsClient(url, { connectionParams: bearer(watcher.secret) }));
    try {
      const subs = clients.map((client) => collect(client, 'subscription { events(after: "0") { id } }'));
      for (const sub of subs) await sub.waitFor(1, 30_000);
      for (const sub of subs) expect(sub.errors).toEqual([]);
      // Revoked through the first replica, which holds none of the sockets.
      const revoked = await gql(urls[0]!, `mutation($id: ID!) { revokeApiToken(id: $id) { revokedAt } }`, { id: watcher.id }, bearer(ADMIN));
      expect(revoked.data.revokeApiToken.revokedAt).toBeTruthy();
      for (const sub of subs) await until('the subscription to be closed', () => sub.errors.length > 0 || sub.isCompleted());
      for (const sub of subs) expect(JSON.stringify(sub.errors)).toMatch(/4403|revoked/);
      for (const url of urls) {
        const res = await gql(url, '{ serverInfo { version } }', {}, bearer(watcher.secret));
        expect(res.status).toBe(401);
      }
    } finally {
      for (const client of clients) await client.dispose();
    }
  }, 120_000);

  it('makes one rollout of 30 bumps of the same pools without a key spread over the three replicas; 29 are CONFLICT', async () => {
    // Last: the canary pool moves to NEWER, which would make the other tests' bumps to NEW downgrades.
    // Attack finding (issue 15): the overlap check was a read before the creating transaction, so replicas racing
    // without a key each passed it and created overlapping rollouts. A new image (the pools run NEW already) and a
    // canary of one pool, so the winner stays active (PAUSED after the canary) while it is looked at.
    const ci = await newToken('ci-no-key', 'deployer');
    const input = { image: NEWER, strategy: { maxUnavailable: '1', canary: 1 }, cause: { actor: 'ci' } };
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const res = await gql(urls[i % 3]!, BUMP, { input }, bearer(ci.secret));
        return res.errors
          ? { code: res.errors[0]?.extensions?.code as string, message: res.errors[0]?.message as string }
          : { id: res.data.bumpAgentImage.rollout.id as string };
      }),
    );
    const created = answers.filter((a) => 'id' in a);
    expect(created).toHaveLength(1);
    const id = (created[0] as { id: string }).id;
    const refused = answers.filter((a) => 'code' in a);
    expect(refused).toHaveLength(29);
    for (const r of refused) {
      expect(r.code).toBe('CONFLICT');
      expect(r.message).toContain(`active rollout ${id} already covers`);
    }
    for (const url of urls) {
      const res = await gql(
        url,
        `{ rollouts(filter: { states: [PENDING, PROGRESSING, PAUSED] }) { totalCount edges { node { id } } } }`,
        {},
        bearer(ci.secret),
      );
      expect(res.data.rollouts).toEqual({ totalCount: 1, edges: [{ node: { id } }] });
    }
    // Out of the way of the next tests.
    const aborted = await gql(urls[1]!, `mutation($id: ID!) { abortRollout(id: $id) { state } }`, { id }, bearer(ci.secret));
    expect(aborted.data?.abortRollout?.state).toBe('ABORTED');
  }, 120_000);
});
