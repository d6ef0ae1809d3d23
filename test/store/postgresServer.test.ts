import pg from 'pg';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { BUMP, FAST_ENV, NEW, startRig, waitForRollout, type Rig } from '../e2e/agentPool/rig.js';
import { gql } from '../helpers/graphql.js';
import { collect, wsClient } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { LISTENER_APPLICATION_NAME } from '../../src/store/postgres/PgEventNotifier.js';

const EVENTS = `subscription($after: ID) { events(after: $after) { id type object { name } payload } }`;

/** An API-only replica (no controllers) of the service on `url`, against the rig's simulator. */
function apiReplicaConfig(url: string, kubeconfigPath: string) {
  return loadConfig(
    { ...FAST_ENV, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url, ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: kubeconfigPath, ROLLPLANE_CONTROLLERS: 'off' },
    [],
  );
}
describeWithPostgres('the server on PostgreSQL', (server) => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('migrates at start, rolls out a new agent image through the simulator, and streams the history in id order', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: 'pools=4,nodes=2', delays: { podReadyMs: 10, podTerminateMs: 5 }, env: { DATABASE_URL: url } });
    const r = rig;
    const ready = await fetch(r.url.replace(/\/graphql$/, '/readyz'));
    expect(ready.status).toBe(200);

    let id = '';
    const client = wsClient(r.url);
    const sub = collect(client, EVENTS, { after: '0' });
    try {
      // One idempotency key, several racing requests: one rollout.
      const input = { image: NEW, strategy: { maxUnavailable: '2' }, cause: { actor: 'ci' }, idempotencyKey: 'pg-e2e-1' };
      const answers = await Promise.all([0, 1, 2, 3].map(() => r.gql(BUMP, { input })));
      const ids = new Set(answers.map((a) => a.bumpAgentImage.rollout.id));
      expect(ids.size).toBe(1);
      expect(answers.filter((a) => a.bumpAgentImage.created)).toHaveLength(1);
      id = [...ids][0]!;

      const done = await waitForRollout(r, id, ['SUCCEEDED', 'FAILED']);
      expect(done.state).toBe('SUCCEEDED');
      expect(done.progress).toMatchObject({ total: 4, succeeded: 4 });
      for (let i = 1; i <= 4; i++) expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);

      // The stored history: each pool recreated exactly once.
      const history = await r.gql(`{ events(first: 500) { edges { node { id type object { name } } } } }`);
      const stored = history.events.edges.map((e: any) => e.node);
      const recreated = stored
        .filter((e: any) => e.type === 'AgentRecreated')
        .map((e: any) => e.object.name)
        .sort();
      expect(recreated).toEqual(['net-1', 'net-2', 'net-3', 'net-4']);

      // The live stream: the same events, each once, in id order, ending with the rollout's success.
      await r.waitFor('the stream to catch up', () =>
        sub.results.some((e: any) => e.events.type === 'RolloutStateChanged' && e.events.payload.to === 'SUCCEEDED'),
      );
      const streamed = sub.results.map((e: any) => Number(e.events.id));
      expect(streamed.every((n, i) => i === 0 || n > streamed[i - 1]!)).toBe(true);
      const storedIds = stored.map((e: any) => Number(e.id)).sort((a: number, b: number) => a - b);
      expect(streamed.slice(0, storedIds.length)).toEqual(storedIds);
    } finally {
      sub.unsubscribe();
      await client.dispose();
    }

    // A restart on the same database finds everything applied and the rollout there.
    await r.stopApp();
    const again = await startRig({ fleet: 'pools=1', env: { DATABASE_URL: url } });
    try {
      const data = await again.gql(`query($id: ID!) { rollout(id: $id) { state progress { succeeded } } }`, { id });
      expect(data.rollout).toEqual({ state: 'SUCCEEDED', progress: { succeeded: 4 } });
    } finally {
      await again.close();
    }
  });

  it('makes one rollout of identical mutations spread over three replicas, and every replica serves it', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: 'pools=3,nodes=2', delays: { podReadyMs: 10, podTerminateMs: 5 }, env: { DATABASE_URL: url } });
    const r = rig;
    // Two API-only replicas on the same database (their own pools, as separate processes would have).
    const replicas: App[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const config = apiReplicaConfig(url, r.sim.kubeconfigPath);
        replicas.push(await startApp(config, { logger: pino({ level: 'silent' }) }));
      }
      const urls = [r.url, ...replicas.map((a) => a.url)];
      const input = { image: NEW, strategy: { maxUnavailable: '100%' }, cause: { actor: 'ci' }, idempotencyKey: 'pg-replicas-1' };
      const answers = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const res = await gql(urls[i % 3]!, BUMP, { input });
          expect(res.errors).toBeUndefined();
          return res.data.bumpAgentImage;
        }),
      );
      const ids = new Set(answers.map((a) => a.rollout.id));
      expect(ids.size).toBe(1);
      expect(answers.filter((a) => a.created)).toHaveLength(1);
      const id = [...ids][0]!;
      // The leader (the rig's service) runs it, whichever replica took the request.
      expect((await waitForRollout(r, id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      for (const replica of replicas) {
        const res = await gql(replica.url, `query($id: ID!) { rollout(id: $id) { state progress { succeeded } } }`, { id });
        expect(res.data.rollout).toEqual({ state: 'SUCCEEDED', progress: { succeeded: 3 } });
      }
    } finally {
      for (const replica of replicas) await replica.stop();
    }
  });

  it('feeds subscribers on a replica that did not write the events, once each and in id order, across a lost LISTEN connection', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: 'pools=4,nodes=2', delays: { podReadyMs: 30, podTerminateMs: 10 }, env: { DATABASE_URL: url } });
    const r = rig;
    const config = apiReplicaConfig(url, r.sim.kubeconfigPath);
    const replica = await startApp(config, { logger: pino({ level: 'silent' }) });
    const database = new URL(url).pathname.slice(1);
    const client = wsClient(replica.url);
    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    try {
      const start = (await direct.query<{ id: number }>('SELECT COALESCE(max("id"), 0)::int AS id FROM "Event"')).rows[0]!.id;
      const sub = collect(client, EVENTS, { after: String(start) });
      const res = await gql(r.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' }, cause: { actor: 'ci' } } });
      const id = res.data.bumpAgentImage.rollout.id;
      // Cut every replica's LISTEN connection mid-rollout: notifications sent meanwhile are lost, the table is not.
      await r.waitFor('a few events on the other replica', () => sub.results.length >= 3);
      const killed = await server().admin<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = $2`,
        [LISTENER_APPLICATION_NAME, database],
      );
      expect(killed.rows[0]!.n).toBe(2);
      expect((await waitForRollout(r, id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      await r.waitFor(
        'the other replica to see the end',
        () => sub.results.some((e: any) => e.events.type === 'RolloutStateChanged' && e.events.payload.to === 'SUCCEEDED'),
        30_000,
      );
      const streamed = sub.results.map((e: any) => Number(e.events.id));
      const ids = (await direct.query<{ id: number }>('SELECT "id" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [start])).rows.map((row) => row.id);
      expect(ids.length).toBeGreaterThan(8);
      expect(streamed.slice(0, ids.length)).toEqual(ids);
      expect(new Set(streamed).size).toBe(streamed.length);
      sub.unsubscribe();
    } finally {
      await client.dispose();
      await replica.stop();
      await direct.end();
    }
  });
});
