import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { agentName } from '../../src/kinds/agentPool/controller/names.js';
import { ensureBuilt, type ServiceProcess, startService } from '../helpers/child.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { isLeader, START_TIMEOUT_MS } from './replicas.js';
import {
  audit,
  auditMark,
  checkOneWriterPerCluster,
  type Fleet,
  heldShards,
  LEASE_NAME,
  pools,
  killReplicas,
  registerMembers,
  replicaEnv,
  seesMembers,
  startFleet,
  stopFleet,
} from './shards/fleet.js';

/**
 * Issue 30, "crash-safe" (docs/waves.md, ADR 0072): a staged run across member clusters survives its leader. Two
 * replicas — the built service (dist/), as deployed — on one PostgreSQL, a Kubernetes Lease choosing the leader (and
 * shard Leases the members), six simulated members in a process of their own. The run has three waves with gates
 * between them: an approval before the second, a soak after it and a timed wait before the third. The leader is
 * SIGKILLed mid-wave in one case and SIGSTOPped mid-wave in the other (its lease expires, the other replica takes over,
 * an approval arrives there while it is frozen; then SIGCONT). Either way: the other replica finishes the run, every
 * pool is recreated exactly once, no wave starts before its gate passed, the history holds every event once and tells
 * a consistent story, and a resumed leader stands down without writing a row of the run.
 */
const POOLS = 2;
const SHARDS = 4;
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const IMAGES = ['rancher/harvester-vm-dhcp-agent:v0.3.1', 'rancher/harvester-vm-dhcp-agent:v0.3.2'];
const WAVES = { canary: ['m-1', 'm-2'], prod: ['m-3', 'm-4'], rest: ['m-5', 'm-6'] } as const;
const SOAK_SECONDS = 2;
const TERMINAL = ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK', 'PAUSED'];

const BUMP = `mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id state } } }`;
const ROLLOUT = `query ($id: ID!) { rollout(id: $id) { state message wavePlan { waves { name state } } gates { key state decisions { by decision } } } }`;
const APPROVE = `mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "before:prod", comment: "go") { state } }`;
const EVENTS = `subscription($after: ID) { events(after: $after) { id type } }`;

/** The tables a run's engine writes; a trigger logs each write with the writer's `application_name` (one per replica). */
const WATCHED = ['Rollout', 'RolloutTarget', 'RolloutWave', 'RolloutGate', 'Event'];

interface StoredEvent {
  id: number;
  type: string;
  cluster: string | null;
  name: string | null;
  payload: Record<string, unknown>;
  createdAt: Date;
}

describeWithPostgres('a staged run across two replicas whose leader is lost mid-wave', (server) => {
  let fleet: Fleet;
  const services: ServiceProcess[] = [];
  const clients: pg.Client[] = [];
  const sockets: ReturnType<typeof wsClient>[] = [];

  beforeAll(async () => {
    await ensureBuilt();
    fleet = await startFleet(6, `pools=${POOLS},nodes=1,peers=0`);
    await registerMembers(fleet);
  }, 300_000);
  afterEach(async () => {
    for (const ws of sockets.splice(0)) await ws.dispose();
    await killReplicas(services);
    for (const client of clients.splice(0)) await client.end();
  });
  afterAll(() => stopFleet(fleet));

  /**
   * Two replicas on a fresh database, A leading; both see every member and hold shards. Each connects to PostgreSQL as
   * `replica-a` / `replica-b`, and a trigger logs every write to the run's tables with that name (`WriteLog`).
   */
  async function startReplicas() {
    const url = await server().createDatabase();
    // LOG_LEVEL from CHAOS_LOG when set: the replicas' logs, to see what a failing run did.
    const env = { ...replicaEnv(fleet, SHARDS, url), LOG_LEVEL: process.env.CHAOS_LOG ?? 'warn' };
    const a = await startService({ ...env, DATABASE_URL: `${url}?application_name=replica-a` }, START_TIMEOUT_MS, { built: true });
    services.push(a);
    await until('A to lead', () => isLeader(a), 60_000);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    clients.push(db);
    await db.query(
      'CREATE TABLE "WriteLog" (id bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL, app text NOT NULL, at timestamptz NOT NULL, what text)',
    );
    await db.query(`CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "WriteLog" (tbl, op, app, at, what)
          VALUES (TG_TABLE_NAME, TG_OP, current_setting('application_name'), clock_timestamp(),
                  concat_ws(' ', to_jsonb(NEW)->>'type', to_jsonb(NEW)->>'cluster', to_jsonb(NEW)->>'name', to_jsonb(NEW)->>'state'));
        RETURN NULL;
      END $$`);
    for (const table of WATCHED) {
      await db.query(`CREATE TRIGGER "log_${table}" AFTER INSERT OR UPDATE ON "${table}" FOR EACH ROW EXECUTE FUNCTION log_write()`);
    }
    const b = await startService({ ...env, DATABASE_URL: `${url}?application_name=replica-b` }, START_TIMEOUT_MS, { built: true });
    services.push(b);
    await until('both replicas to see every member', async () => (await seesMembers(a, fleet.members)) && (await seesMembers(b, fleet.members)), 120_000);
    await until(
      'the shards to be spread over both replicas',
      async () => {
        const [onA, onB] = [await heldShards(a), await heldShards(b)];
        return onA.length > 0 && onB.length > 0 && onA.length + onB.length === SHARDS;
      },
      60_000,
    );
    expect(await isLeader(b)).toBe(false);
    return { a, b, db };
  }

  /** Starts the staged run on `service`: canary, then an approval, prod, a soak, a timed wait, rest; one cluster at a time. */
  async function startRun(service: ServiceProcess, image: string): Promise<string> {
    const res = await gql(service.url, BUMP, {
      input: {
        image,
        memberClusters: { labelSelector: 'tier=edge' },
        strategy: { maxUnavailable: '1', autoRollback: false, progressDeadlineSeconds: 120 },
        allowDowngrade: true,
        waveStrategy: {
          waves: [
            { name: 'canary', clusters: { names: WAVES.canary }, maxConcurrency: '1' },
            {
              name: 'prod',
              clusters: { names: WAVES.prod },
              maxConcurrency: '1',
              minSuccessSeconds: SOAK_SECONDS,
              // Authentication is off: every caller is `anonymous`, who also started the run.
              before: { type: 'APPROVAL', config: { excludeStarter: false } },
            },
            { name: 'rest', clusters: { names: WAVES.rest }, maxConcurrency: '1', before: { type: 'TIMED_WAIT', config: { seconds: 1 } } },
          ],
          remainder: 'EXCLUDED',
        },
      },
    });
    expect(res.errors).toBeUndefined();
    return res.data.bumpAgentImage.rollout.id as string;
  }

  /** The leader Lease's holder, as the management cluster last recorded it. */
  const leaderIdentity = async () => (await audit(fleet, 'mgmt')).filter((r) => r.resource === 'leases' && r.name === LEASE_NAME && r.holder).at(-1)!.holder!;
  const targetStates = async (db: pg.Client, id: string) =>
    (await db.query<{ cluster: string; name: string; state: string }>('SELECT "cluster", "name", "state" FROM "RolloutTarget" WHERE "rolloutId" = $1', [id]))
      .rows;
  const succeededIn = async (db: pg.Client, id: string, clusters: readonly string[]) =>
    (await targetStates(db, id)).filter((t) => clusters.includes(t.cluster) && t.state === 'SUCCEEDED').length;
  const history = async (db: pg.Client, id: string): Promise<StoredEvent[]> =>
    (
      await db.query<Omit<StoredEvent, 'payload'> & { payload: string }>(
        'SELECT "id", "type", "cluster", "name", "payload", "createdAt" FROM "Event" WHERE "rolloutId" = $1 ORDER BY "id"',
        [id],
      )
    ).rows.map((e) => ({ ...e, payload: JSON.parse(e.payload) as Record<string, unknown> }));
  /** What the store says of the run (a wait's failure message). */
  let seen = '';
  const observe = async (db: pg.Client, id: string) => {
    const run = (await db.query('SELECT "state", "message", "engineState" FROM "Rollout" WHERE "id" = $1', [id])).rows[0];
    const waves = (await db.query('SELECT "name", "state", "reason" FROM "RolloutWave" WHERE "rolloutId" = $1 ORDER BY "ordinal"', [id])).rows;
    const targets = (await targetStates(db, id)).map((t) => `${t.cluster}/${t.name}:${t.state}`).sort();
    const events = (await history(db, id)).map((e) => `${e.id} ${e.type} ${e.cluster ?? ''}/${e.name ?? ''} ${JSON.stringify(e.payload)}`);
    seen = JSON.stringify({ run, waves, targets, events }, null, 1);
  };
  const gateWaiting = async (db: pg.Client, id: string, gate: string) => {
    await observe(db, id);
    return (await history(db, id)).some((e) => e.type === 'GateWaiting' && e.payload.gateKey === gate);
  };

  /** Waits (asking `service`) until the run ended, and returns it. */
  const ended = (service: ServiceProcess, id: string) =>
    until(
      'the run to end',
      async () => {
        const rollout = (await gql(service.url, ROLLOUT, { id })).data?.rollout;
        return TERMINAL.includes(rollout?.state) ? rollout : undefined;
      },
      240_000,
    );

  /** Every pool of every member at `image`, its agent created exactly once since `from`, and one AgentRecreated each. */
  async function expectEachPoolOnce(image: string, events: StoredEvent[], from: number): Promise<void> {
    for (const cluster of fleet.members) {
      const found = await pools(fleet, cluster);
      expect(found.length, cluster).toBe(POOLS);
      const creates = (await audit(fleet, cluster, from)).filter((r) => r.verb === 'create' && r.resource === 'pods');
      for (const pool of found) {
        expect(pool.status?.agentPodRef?.image, `${cluster}/${pool.metadata?.name}`).toBe(image);
        const agent = agentName(pool.metadata!.namespace!, pool.metadata!.name!);
        expect(creates.filter((r) => r.name === agent).length, `${cluster}/${agent} created`).toBe(1);
      }
    }
    const recreated = events.filter((e) => e.type === 'AgentRecreated').map((e) => `${e.cluster}/${e.name}`);
    expect(recreated.sort()).toEqual(fleet.members.flatMap((c) => Array.from({ length: POOLS }, (_, i) => `${c}/net-${i + 1}`)).sort());
  }

  /**
   * The run's history tells one consistent story: each wave started and finished once, in order; each gate waited and
   * ended once, and no cluster of a wave was admitted before the wave's gate passed or its wave started; the soak was
   * kept; each target moved PENDING → … → SUCCEEDED once, every change following the last; the run succeeded once.
   */
  function expectConsistentHistory(events: StoredEvent[]): void {
    try {
      expectConsistent(events);
    } catch (error) {
      const story = events.map((e) => `${e.id} ${e.createdAt.toISOString()} ${e.type} ${e.cluster ?? ''}/${e.name ?? ''} ${JSON.stringify(e.payload)}`);
      throw new Error(`${(error as Error).message}\nhistory:\n${story.join('\n')}`, { cause: error });
    }
  }

  function expectConsistent(events: StoredEvent[]): void {
    const only = (type: string, match: (e: StoredEvent) => boolean = () => true) => {
      const found = events.filter((e) => e.type === type && match(e));
      expect(found.length, `${type} ${match}`).toBe(1);
      return found[0]!;
    };
    const byWave = (wave: string) => (e: StoredEvent) => e.payload.waveName === wave;
    const byGate = (gate: string) => (e: StoredEvent) => e.payload.gateKey === gate;
    const started = Object.fromEntries(Object.keys(WAVES).map((w) => [w, only('WaveStarted', byWave(w))]));
    const finished = Object.fromEntries(Object.keys(WAVES).map((w) => [w, only('WaveFinished', byWave(w))]));
    for (const wave of Object.keys(WAVES)) expect(finished[wave]!.payload.outcome, wave).toBe('SUCCEEDED');
    const firstAdmission = (clusters: readonly string[]) =>
      Math.min(...events.filter((e) => e.type === 'TargetStateChanged' && clusters.includes(e.cluster ?? '') && e.payload.to !== 'PENDING').map((e) => e.id));
    const lastEnd = (clusters: readonly string[]) =>
      Math.max(...events.filter((e) => e.type === 'TargetStateChanged' && clusters.includes(e.cluster ?? '') && e.payload.to === 'SUCCEEDED').map((e) => e.id));
    const prodGate = {
      waiting: only('GateWaiting', byGate('before:prod')),
      approved: only('GateApproved', byGate('before:prod')),
      ended: only('GateEnded', byGate('before:prod')),
    };
    const restGate = { waiting: only('GateWaiting', byGate('before:rest')), ended: only('GateEnded', byGate('before:rest')) };
    expect(prodGate.ended.payload.state).toBe('PASSED');
    expect(restGate.ended.payload.state).toBe('PASSED');
    // Canary, then the approval, then prod; prod's end, its soak, the timed wait, then rest.
    expect(lastEnd(WAVES.canary)).toBeLessThan(finished.canary!.id);
    expect(finished.canary!.id).toBeLessThan(prodGate.waiting.id);
    expect(prodGate.waiting.id).toBeLessThan(prodGate.approved.id);
    expect(prodGate.approved.id).toBeLessThan(firstAdmission(WAVES.prod));
    expect(prodGate.ended.id).toBeLessThan(firstAdmission(WAVES.prod));
    expect(started.prod!.id).toBeLessThan(firstAdmission(WAVES.prod));
    expect(lastEnd(WAVES.prod)).toBeLessThan(finished.prod!.id);
    expect(finished.prod!.id).toBeLessThan(restGate.waiting.id);
    expect(restGate.ended.id).toBeLessThan(firstAdmission(WAVES.rest));
    expect(restGate.ended.payload.waitedSeconds).toBeGreaterThanOrEqual(1);
    expect(started.rest!.id).toBeLessThan(firstAdmission(WAVES.rest));
    // Each target's changes follow one another, once each, ending SUCCEEDED.
    const changes = new Map<string, { from: unknown; to: unknown }[]>();
    for (const e of events.filter((x) => x.type === 'TargetStateChanged')) {
      const key = `${e.cluster}/${e.name}`;
      changes.set(key, [...(changes.get(key) ?? []), { from: e.payload.from, to: e.payload.to }]);
    }
    expect(changes.size).toBe(fleet.members.length * POOLS);
    for (const [key, moves] of changes) {
      for (let i = 1; i < moves.length; i++) expect(moves[i]!.from, `${key}: ${JSON.stringify(moves)}`).toBe(moves[i - 1]!.to);
      expect(moves.at(-1)!.to, key).toBe('SUCCEEDED');
      expect(new Set(moves.map((m) => m.to)).size, `${key}: ${JSON.stringify(moves)}`).toBe(moves.length);
    }
    const runStates = events.filter((e) => e.type === 'RolloutStateChanged').map((e) => e.payload.to);
    expect(runStates.filter((s) => s === 'SUCCEEDED')).toEqual(['SUCCEEDED']);
    expect(runStates.at(-1)).toBe('SUCCEEDED');
  }

  /**
   * Once the run ended: every pool once at `image` (since the audit mark `from`), a consistent history, one writer per
   * member at every moment, and the subscriber on B streamed every event stored after `start` once, in order.
   */
  async function expectRunOutcome(o: { db: pg.Client; id: string; image: string; from: number; start: number; onB: ReturnType<typeof collect> }) {
    const events = await history(o.db, o.id);
    await expectEachPoolOnce(o.image, events, o.from);
    expectConsistentHistory(events);
    // The soak and the timed wait on the engine's clock, as recorded (an event's commit time trails its pass's clock).
    const prodEnded = (
      await o.db.query<{ at: Date }>('SELECT max("finishedAt") AS at FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "cluster" = ANY($2)', [o.id, WAVES.prod])
    ).rows[0]!.at;
    const restGate = (
      await o.db.query<{ openedAt: Date; endedAt: Date }>('SELECT "openedAt", "endedAt" FROM "RolloutGate" WHERE "rolloutId" = $1 AND "key" = $2', [
        o.id,
        'before:rest',
      ])
    ).rows[0]!;
    expect(restGate.openedAt.getTime() - prodEnded.getTime()).toBeGreaterThanOrEqual(SOAK_SECONDS * 1000);
    expect(restGate.endedAt.getTime() - restGate.openedAt.getTime()).toBeGreaterThanOrEqual(1000);
    await checkOneWriterPerCluster(fleet, SHARDS, o.from);
    await until('B to stream the run to its end', () => o.onB.results.some((e: any) => e.events.id === String(events.at(-1)!.id)));
    await expectStreamed(o.db, o.onB, o.start);
    o.onB.unsubscribe();
  }

  /** The subscription `on` received every event of the store after `start` once, in id order (up to what it streamed). */
  async function expectStreamed(db: pg.Client, sub: ReturnType<typeof collect>, start: number): Promise<void> {
    const stored = (await db.query<{ id: number }>('SELECT "id" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [start])).rows.map((r) => r.id);
    expect(sub.errors).toEqual([]);
    const streamed = sub.results.map((e: any) => Number(e.events.id));
    expect(streamed).toEqual(stored.slice(0, streamed.length));
  }

  /**
   * Two replicas, A leading; B's subscriber from the last event on; the run started on A, once one canary pool is done
   * (the wave mid-way). `from` is the management cluster's audit mark, `start` the last event id before the run.
   */
  async function runToMidCanary(image: string) {
    const { a, b, db } = await startReplicas();
    const from = await auditMark(fleet);
    const start = (await db.query<{ id: number }>('SELECT COALESCE(max("id"), 0)::int AS id FROM "Event"')).rows[0]!.id;
    const ws = wsClient(b.url);
    sockets.push(ws);
    const onB = collect(ws, EVENTS, { after: String(start) });
    const id = await startRun(a, image);
    await until('the canary wave to be mid-way', async () => (await succeededIn(db, id, WAVES.canary)) >= 1, 120_000);
    return { a, b, db, from, start, onB, id };
  }

  it('SIGKILL of the leader mid-wave: the other replica takes over, the run waits at its gate, then finishes; each pool once', async () => {
    const { a, b, db, from, start, onB, id } = await runToMidCanary(IMAGES[0]!);
    expect(await succeededIn(db, id, WAVES.canary)).toBeLessThan(WAVES.canary.length * POOLS);
    a.child.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');

    await until('B to lead', () => isLeader(b), 60_000);
    await until(
      () => `the run to wait at the approval gate; seen ${seen}`,
      () => gateWaiting(db, id, 'before:prod'),
      120_000,
    );
    // At the gate: canary done, nothing of prod or rest touched, and the run holds there.
    const held = (await gql(b.url, ROLLOUT, { id })).data.rollout;
    expect(held.state).toBe('PROGRESSING');
    expect(held.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['SUCCEEDED', 'RUNNING', 'PENDING']);
    for (const cluster of [...WAVES.prod, ...WAVES.rest]) for (const pool of await pools(fleet, cluster)) expect(pool.status?.agentPodRef?.image).toBe(OLD);
    expect((await targetStates(db, id)).filter((t) => !WAVES.canary.includes(t.cluster as 'm-1')).every((t) => t.state === 'PENDING')).toBe(true);

    expect((await gql(b.url, APPROVE, { id })).data?.approveGate.state).toBe('PASSED');
    const done = await ended(b, id);
    expect(done.state, done.message).toBe('SUCCEEDED');
    expect(done.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    expect(done.gates.map((g: { key: string; state: string }) => `${g.key}:${g.state}`)).toEqual(['before:prod:PASSED', 'before:rest:PASSED']);

    await expectRunOutcome({ db, id, image: IMAGES[0]!, from, start, onB });
  }, 600_000);

  it('SIGSTOP of the leader mid-wave: the other takes over and an approval arrives there; resumed, the old leader stands down without writing', async () => {
    const { a, b, db, from, start, onB, id } = await runToMidCanary(IMAGES[1]!);
    const identityA = await leaderIdentity();
    a.child.kill('SIGSTOP');
    await until('B to lead', () => isLeader(b), 60_000);
    const mark = (await db.query<{ id: string }>('SELECT COALESCE(max(id), 0) AS id FROM "WriteLog"')).rows[0]!.id;

    // While A is frozen: B finishes the canary wave, the run waits at the gate, the approval arrives on B.
    await until(
      () => `the run to wait at the approval gate; seen ${seen}`,
      () => gateWaiting(db, id, 'before:prod'),
      120_000,
    );
    expect((await gql(b.url, APPROVE, { id })).data?.approveGate.state).toBe('PASSED');
    await until('the prod wave to be mid-way', async () => (await succeededIn(db, id, WAVES.prod)) >= 1, 120_000);

    // Resumed mid-wave, its lease long expired: it notices, and writes no row of the run.
    const resumedAt = Date.now();
    a.child.kill('SIGCONT');
    await until('A to say it does not lead', async () => !(await isLeader(a)), 60_000);
    const done = await ended(b, id);
    expect(done.state, done.message).toBe('SUCCEEDED');
    expect(await isLeader(b)).toBe(true);
    // A may take shards again (they are spread over live replicas) and then write its members' events (the agents
    // it recreates): only after it acquired a Lease anew. Of what only the leader writes — the run, its targets, waves
    // and gates, and their events — nothing, ever, after B took over.
    const reacquiredAt = Math.min(
      ...(await audit(fleet, 'mgmt')).filter((r) => r.resource === 'leases' && r.holder === identityA && r.at >= resumedAt).map((r) => r.at),
    );
    const byA = (
      await db.query<{ tbl: string; op: string; at: Date; what: string }>('SELECT tbl, op, at, what FROM "WriteLog" WHERE id > $1 AND app = $2 ORDER BY id', [
        mark,
        'replica-a',
      ])
    ).rows;
    const stale = byA.filter((w) => !(w.tbl === 'Event' && w.what.startsWith('AgentRecreated ') && w.at.getTime() >= reacquiredAt));
    expect(stale, `A resumed at ${new Date(resumedAt).toISOString()}, took a Lease again at ${new Date(reacquiredAt).toISOString()}`).toEqual([]);

    await expectRunOutcome({ db, id, image: IMAGES[1]!, from, start, onB });
  }, 600_000);
});
