import pg from 'pg';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { BUMP, NEW, ROLLOUT, startRig, waitForRollout, type Rig, agentCreationsPerPool } from './agentPool/rig.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

const EVENTS = `subscription($after: ID) { events(after: $after) { id type object { name } payload } }`;
const POOLS = 6;

interface Readiness {
  status: string;
  checks: { name: string; ok: boolean; error?: string }[];
}

async function readiness(baseUrl: string): Promise<{ status: number; body: Readiness }> {
  const res = await fetch(`${baseUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
}

describeWithPostgres('PostgreSQL restarted mid-rollout', (server) => {
  let rig: Rig | undefined;
  let direct: pg.Client | undefined;
  afterEach(async () => {
    await direct?.end().catch(() => undefined);
    direct = undefined;
    await rig?.close();
    rig = undefined;
  });

  it('answers UNAVAILABLE and reports it on /readyz while it is down, then finishes the rollout with nothing lost or repeated', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: `pools=${POOLS},nodes=2`, delays: { podReadyMs: 200, podTerminateMs: 20 }, env: { DATABASE_URL: url } });
    const r = rig;
    const baseUrl = r.url.replace(/\/graphql$/, '');
    // Every agent pod created from here on, per pool: a pool recreated twice would show 2.
    const created = agentCreationsPerPool(r);
    const recreatedSoFar = () => [...created.values()].reduce((a, b) => a + b, 0);

    const start = Number((await r.gql('{ serverInfo { lastEventId } }')).serverInfo.lastEventId);
    const client = wsClient(r.url);
    const sub = collect(client, EVENTS, { after: String(start) });
    try {
      const bump = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' }, cause: { actor: 'ci' }, idempotencyKey: 'pg-restart-1' } });
      const id = bump.bumpAgentImage.rollout.id as string;
      await r.waitFor('the rollout to be under way', () => recreatedSoFar() >= 2);

      await server().shutDown('fast');
      // Reads and writes: UNAVAILABLE with a reason, never a 500 or INTERNAL_SERVER_ERROR.
      const read = await gql(r.url, ROLLOUT, { id });
      expect(read.status).toBeLessThan(500);
      expect(read.errors?.map((e) => e.extensions?.code)).toEqual(['UNAVAILABLE']);
      const write = await gql(r.url, 'mutation($id: ID!) { pauseRollout(id: $id, reason: "db down") { state } }', { id });
      expect(write.status).toBeLessThan(500);
      expect(write.errors?.map((e) => e.extensions?.code)).toEqual(['UNAVAILABLE']);
      const another = await gql(r.url, BUMP, {
        input: { image: 'rancher/harvester-vm-dhcp-agent:v0.3.2', cause: { actor: 'ci' }, idempotencyKey: 'pg-restart-2' },
      });
      expect(another.status).toBeLessThan(500);
      expect(
        another.errors?.map((e) => e.extensions?.code),
        JSON.stringify(another.errors),
      ).toEqual(['UNAVAILABLE']);
      // Over the WebSocket that carries the feed too: this operation's error, not a close of the whole socket (4500).
      const overWs = collect(client, 'mutation($id: ID!) { pauseRollout(id: $id, reason: "db down") { state } }', { id });
      await overWs.waitFor(1);
      expect(JSON.stringify(overWs.errors)).toContain('UNAVAILABLE');
      expect(JSON.stringify(overWs.errors)).not.toContain('4500');
      // A subscription begun while the history cannot be read: UNAVAILABLE as well, not an internal error.
      const begunWhileDown = collect(client, 'subscription { events(after: "0") { id } }');
      await begunWhileDown.waitFor(1);
      expect(JSON.stringify(begunWhileDown.errors)).toContain('UNAVAILABLE');
      const down = await readiness(baseUrl);
      expect(down.status).toBe(503);
      expect(down.body.checks.find((c) => c.name === 'database')).toMatchObject({ ok: false, error: expect.stringMatching(/database/i) });
      // Nothing moved on while the history could not record it.
      const whileDown = recreatedSoFar();
      expect(whileDown).toBeLessThan(POOLS);

      await server().restart();
      await until('/readyz to report ready again', async () => (await readiness(baseUrl)).status === 200);
      const done = await waitForRollout(r, id, ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'], 60_000);
      expect(done.state).toBe('SUCCEEDED');
      expect(done.progress).toMatchObject({ total: POOLS, succeeded: POOLS });
      // The refused mutations changed nothing.
      expect((await r.gql('{ rollouts(first: 10) { totalCount } }')).rollouts.totalCount).toBe(1);

      // Each pool recreated once, and recorded once.
      for (let i = 1; i <= POOLS; i++) {
        expect(created.get(`net-${i}`), `net-${i}`).toBe(1);
        expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);
      }
      direct = new pg.Client({ connectionString: url });
      await direct.connect();
      const stored = (
        await direct.query<{ id: number; type: string; name: string | null }>('SELECT "id", "type", "name" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [start])
      ).rows;
      expect(
        stored
          .filter((e) => e.type === 'AgentRecreated')
          .map((e) => e.name)
          .sort(),
      ).toEqual(Array.from({ length: POOLS }, (_, i) => `net-${i + 1}`).sort());
      // The subscriber, connected throughout: every stored event once, in id order, across the outage.
      await until("the stream to reach the rollout's end", () =>
        sub.results.some((e: any) => e.events.type === 'RolloutStateChanged' && e.events.payload.to === 'SUCCEEDED'),
      );
      const streamed = sub.results.map((e: any) => Number(e.events.id));
      expect(sub.errors).toEqual([]);
      expect(streamed).toEqual(stored.map((e) => e.id).slice(0, streamed.length));
      expect(streamed.length).toBe(stored.length);
    } finally {
      sub.unsubscribe();
      await client.dispose();
    }
  }, 120_000);

  it('refuses authenticated requests with 503 UNAVAILABLE and WebSockets with 1013 while it is down, not a 500', async () => {
    const url = await server().createDatabase();
    const admin = 'rp_pg_restart_admin_token_0123456789abcdef';
    const config = loadConfig(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: url,
        ROLLPLANE_KUBE: 'sim',
        ROLLPLANE_SIM_FLEET: 'empty',
        ROLLPLANE_CONTROLLERS: 'off',
        ROLLPLANE_AUTH: 'on',
        ROLLPLANE_ADMIN_TOKEN: admin,
      },
      [],
    );
    const app = await startApp(config, { logger: pino({ level: 'silent' }) });
    const baseUrl = app.url.replace(/\/graphql$/, '');
    const headers = { authorization: `Bearer ${admin}` };
    try {
      expect((await gql(app.url, '{ serverInfo { version } }', {}, headers)).status).toBe(200);
      await server().shutDown('fast');
      // The token cannot be checked: a retryable refusal with the code, before any operation runs.
      for (const query of ['{ serverInfo { version } }', 'mutation { bumpAgentImage(input: { image: "a/agent:v2" }) { created } }']) {
        const res = await gql(app.url, query, {}, headers);
        expect(res.status).toBe(503);
        expect(res.errors?.map((e) => e.extensions?.code)).toEqual(['UNAVAILABLE']);
      }
      const closed = await new Promise<{ code: number; reason: string }>((resolve, reject) => {
        const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
        socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${admin}` } })));
        socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
        socket.on('error', reject);
      });
      expect(closed).toMatchObject({ code: 1013, reason: expect.stringMatching(/database/) });
      expect((await readiness(baseUrl)).status).toBe(503);

      await server().restart();
      await until('/readyz to report ready again', async () => (await readiness(baseUrl)).status === 200);
      const res = await gql(app.url, '{ serverInfo { version } }', {}, headers);
      expect(res.status).toBe(200);
      expect(res.errors).toBeUndefined();
    } finally {
      await app.stop();
    }
  });
});
