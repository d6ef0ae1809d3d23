import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { BUMP, FAST_ENV, NEW, ROLLOUT, startRig, type Rig, agentCreationsPerPool } from './agentPool/rig.js';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { isLeader, LEASE_ENV, START_TIMEOUT_MS } from './replicas.js';

const EVENTS = `subscription($after: ID) { events(after: $after) { id type object { name } payload } }`;
const POOLS = 8;

function alive(service: ServiceProcess): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}

describeWithPostgres('three replicas on one PostgreSQL', (server) => {
  let rig: Rig | undefined;
  const services: ServiceProcess[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) {
      if (alive(service)) service.child.kill('SIGKILL');
      await service.exited;
    }
    await rig?.close();
    rig = undefined;
  });

  it('finishes a rollout whose leader is SIGKILLed mid-way; the other replicas stream every event once, in order, and resume after: ids they did not write', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: `pools=${POOLS},nodes=3`, delays: { podReadyMs: 150, podTerminateMs: 20 }, noApp: true });
    const r = rig;
    // Every agent pod created from here on, per pool: a pool recreated twice would show 2.
    const created = agentCreationsPerPool(r);
    const recreatedSoFar = () => [...created.values()].reduce((a, b) => a + b, 0);
    const env = {
      ...FAST_ENV,
      ...LEASE_ENV,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      ROLLPLANE_KUBE: 'kubeconfig',
      KUBECONFIG: r.sim.kubeconfigPath,
    };

    // A first, so that it leads and takes the mutation: the replica that writes the first events is the one killed.
    const a = await startService(env, START_TIMEOUT_MS);
    services.push(a);
    await until('A to lead', () => isLeader(a));
    // One after the other: three TypeScript start-ups at once on a loaded 2-core machine can exceed the start timeout.
    const b = await startService(env, START_TIMEOUT_MS);
    services.push(b);
    const c = await startService(env, START_TIMEOUT_MS);
    services.push(c);
    expect(await isLeader(b)).toBe(false);
    expect(await isLeader(c)).toBe(false);
    await until('the pools to be listed', async () => (await gql(a.url, '{ agentPools { totalCount } }')).data?.agentPools.totalCount === POOLS);

    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    const clients = [wsClient(b.url), wsClient(c.url)];
    try {
      const start = (await direct.query<{ id: number }>('SELECT COALESCE(max("id"), 0)::int AS id FROM "Event"')).rows[0]!.id;
      const [onB, onC] = clients.map((client) => collect(client, EVENTS, { after: String(start) }));
      const bump = await gql(a.url, BUMP, {
        input: { image: NEW, strategy: { maxUnavailable: '1' }, cause: { actor: 'ci' }, idempotencyKey: 'three-replicas-1' },
      });
      expect(bump.errors).toBeUndefined();
      const id = bump.data.bumpAgentImage.rollout.id as string;

      await until('the rollout to be under way', () => recreatedSoFar() >= 2);
      a.child.kill('SIGKILL');
      expect((await a.exited).signal).toBe('SIGKILL');
      expect(recreatedSoFar()).toBeLessThan(POOLS);
      const lastByA = (await direct.query<{ id: number }>('SELECT max("id")::int AS id FROM "Event"')).rows[0]!.id;

      // Another replica takes the lease and finishes; both answer for the rollout.
      await until('B or C to lead', async () => (await isLeader(b)) || (await isLeader(c)), 30_000);
      const done = await until(
        'the rollout to finish',
        async () => {
          const res = await gql(c.url, ROLLOUT, { id });
          return ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'].includes(res.data?.rollout?.state) ? res.data.rollout : undefined;
        },
        60_000,
      );
      expect(done.state).toBe('SUCCEEDED');
      expect(done.progress).toMatchObject({ total: POOLS, succeeded: POOLS });
      for (let i = 1; i <= POOLS; i++) {
        expect(created.get(`net-${i}`), `net-${i}`).toBe(1);
        expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);
      }
      const storedSinceStart = async () =>
        (
          await direct.query<{ id: number; type: string; name: string | null }>('SELECT "id", "type", "name" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [
            start,
          ])
        ).rows;
      let stored = await storedSinceStart();
      expect(
        stored
          .filter((e) => e.type === 'AgentRecreated')
          .map((e) => e.name)
          .sort(),
      ).toEqual(Array.from({ length: POOLS }, (_, i) => `net-${i + 1}`).sort());
      expect(stored.at(-1)!.id).toBeGreaterThan(lastByA);

      // B and C, connected throughout: the full sequence (A's events and the new leader's), each once, in id order.
      const isEnd = (e: any) => e.events.type === 'RolloutStateChanged' && e.events.payload.to === 'SUCCEEDED';
      await until("B and C to stream the rollout's end", () => onB!.results.some(isEnd) && onC!.results.some(isEnd));
      stored = await storedSinceStart();
      for (const [name, sub] of [
        ['B', onB!],
        ['C', onC!],
      ] as const) {
        expect(sub.errors, name).toEqual([]);
        // (Up to what it has streamed: an event committed after the rollout's end may still be on its way.)
        const streamed = sub.results.map((e: any) => Number(e.events.id));
        expect(streamed, name).toEqual(stored.map((e) => e.id).slice(0, streamed.length));
        sub.unsubscribe();
      }

      // `after:` an id that A wrote, asked of each surviving replica: exactly what the store holds after it.
      const cursor = stored.find((e) => e.type === 'AgentRecreated' && e.id <= lastByA)!.id;
      for (const service of [b, c]) {
        const client = wsClient(service.url);
        clients.push(client);
        const resumed = collect(client, EVENTS, { after: String(cursor) });
        await until('the resumed stream to reach the end', () => resumed.results.some(isEnd));
        const streamed = resumed.results.map((e: any) => Number(e.events.id));
        expect(streamed).toEqual(
          stored
            .filter((e) => e.id > cursor)
            .map((e) => e.id)
            .slice(0, streamed.length),
        );
        resumed.unsubscribe();
      }
    } finally {
      await Promise.all(clients.map((client) => client.dispose()));
      await direct.end();
    }
  }, 300_000);
});
