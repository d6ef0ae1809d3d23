import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { gql, gqlData } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { BUMP, FAST_ENV, NEW, ROLLOUT, startRig, type Rig } from './agentPool/rig.js';
import { isLeader, LEASE_ENV, START_TIMEOUT_MS } from './replicas.js';

const POOLS = 18;
/** Accepted requests before the receiver starts holding answers back, so that the leader is killed mid-delivery. */
const ACCEPTED_BEFORE_KILL = 30;
const SECRET = 'replicas-signing-secret-0123456789abcdef';
const PATHS = ['/one', '/two'];

function alive(service: ServiceProcess): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}

describeWithPostgres('notifications on three replicas of one PostgreSQL', (server) => {
  let rig: Rig | undefined;
  let receiver: Receiver | undefined;
  const services: ServiceProcess[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) {
      if (alive(service)) service.child.kill('SIGKILL');
      await service.exited;
    }
    await receiver?.close();
    await rig?.close();
    rig = undefined;
  });

  it('delivers every event of a queue of 100+ at least once, only ever from the Lease holder, and exactly once after deduplication, with the leader SIGKILLed mid-delivery', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: `pools=${POOLS},nodes=3`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = rig;
    // Who holds the leader Lease, over time: written by the replicas to the simulator, seen here as it happens.
    const leases = r.sim.store.resourceType('coordination.k8s.io', 'leases')!;
    const holders: { at: number; holder: string }[] = [];
    r.sim.store.subscribe((event) => {
      if (event.resource !== leases) return;
      const holder = event.object.spec?.holderIdentity as string | undefined;
      if (holder && holders.at(-1)?.holder !== holder) holders.push({ at: Date.now(), holder });
    });
    const holderAt = (at: number) => holders.filter((h) => h.at <= at).at(-1)?.holder;

    // The receiver refuses everything at first (503: not received), so that the deliveries queue up.
    receiver = await Receiver.start();
    const rec = receiver;
    let mode: 'closed' | 'open' | 'holding' | 'release' = 'closed';
    let accepted = 0;
    for (const path of PATHS) {
      rec.on(path, () => {
        if (mode === 'closed') return { status: 503, body: 'not yet' };
        if (mode === 'holding') return 'hang';
        if (mode === 'open' && ++accepted >= ACCEPTED_BEFORE_KILL) mode = 'holding';
        return { status: 200 };
      });
    }

    const env = {
      ...FAST_ENV,
      ...LEASE_ENV,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      ROLLPLANE_KUBE: 'kubeconfig',
      KUBECONFIG: r.sim.kubeconfigPath,
      ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8',
      ROLLPLANE_NOTIFY_BACKOFF_MS: '200',
      ROLLPLANE_NOTIFY_BACKOFF_MAX_MS: '500',
      ROLLPLANE_NOTIFY_MAX_ATTEMPTS: '100',
      ROLLPLANE_NOTIFY_CONCURRENCY: '4',
    };
    const a = await startService(env, START_TIMEOUT_MS);
    services.push(a);
    await until('A to lead', () => isLeader(a));
    const b = await startService(env, START_TIMEOUT_MS);
    services.push(b);
    const c = await startService(env, START_TIMEOUT_MS);
    services.push(c);

    // Subscriptions made on a replica that does not lead; the rollout started on another.
    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    try {
      const subscriptionIds: string[] = [];
      for (const path of PATHS) {
        const created = await gqlData(
          b.url,
          `mutation($input: CreateNotificationSubscriptionInput!) { createNotificationSubscription(input: $input) { subscription { id } } }`,
          { input: { name: `all${path.replace('/', '-')}`, sink: { kind: 'WEBHOOK', url: rec.url(path), secret: SECRET } } },
        );
        subscriptionIds.push(created.createNotificationSubscription.subscription.id);
      }
      const start = (await direct.query<{ id: number }>('SELECT COALESCE(max("id"), 0)::int AS id FROM "Event"')).rows[0]!.id;
      const bump = await gql(c.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '100%' }, cause: { actor: 'ci' } } });
      expect(bump.errors).toBeUndefined();
      const id = bump.data.bumpAgentImage.rollout.id as string;
      await until('the rollout to succeed', async () => (await gql(b.url, ROLLOUT, { id })).data?.rollout?.state === 'SUCCEEDED', 60_000);

      // Every event since the subscriptions has a delivery per subscription, all queued (the receiver said 503).
      const events = (await direct.query<{ id: number }>('SELECT "id" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [start])).rows.map((e) => String(e.id));
      const queued = async () =>
        (
          await direct.query<{ subscriptionId: string; eventId: number; state: string }>(
            'SELECT "subscriptionId", "eventId", "state" FROM "NotificationDelivery"',
          )
        ).rows;
      const before = await queued();
      expect(before.length).toBeGreaterThanOrEqual(100);
      expect(before.every((d) => d.state === 'PENDING')).toBe(true);
      for (const subscriptionId of subscriptionIds) {
        expect(
          before
            .filter((d) => d.subscriptionId === subscriptionId)
            .map((d) => String(d.eventId))
            .sort(),
        ).toEqual([...events].sort());
      }

      // Open; after ACCEPTED_BEFORE_KILL answers the receiver holds every answer back: A is mid-delivery when killed.
      mode = 'open';
      await until('A to be mid-delivery: answers held back, requests in flight', () => rec.requests.some((q) => q.answer === 'hang'));
      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      expect((await a.exited).signal).toBe('SIGKILL');
      const leaderA = holders.at(-1)!.holder;
      mode = 'release';

      await until('B or C to lead', async () => (await isLeader(b)) || (await isLeader(c)), 30_000);
      await until('every delivery to be delivered', async () => (await queued()).every((d) => d.state === 'DELIVERED'), 60_000);

      // Every request from the replica that held the Lease at that moment: A until it died, then its successor.
      const newLeader = holders.at(-1)!.holder;
      expect(newLeader).not.toBe(leaderA);
      for (const req of rec.requests) {
        expect(req.headers['x-rollplane-replica'], `request at ${req.at}`).toBe(holderAt(req.at));
      }
      const senders = new Set(rec.requests.map((q) => q.headers['x-rollplane-replica']));
      expect([...senders].sort()).toEqual([leaderA, newLeader].sort());
      expect(rec.requests.filter((q) => q.headers['x-rollplane-replica'] === leaderA).every((q) => q.at <= killedAt)).toBe(true);

      // At least once, and exactly once after deduplication on the CloudEvent id: every event, nothing else.
      for (const path of PATHS) {
        const arrived = rec.verified(path, SECRET).filter((q) => q.answer !== 503);
        expect(arrived.length).toBeGreaterThanOrEqual(events.length);
        expect([...rec.distinctIds(path)].sort()).toEqual([...events].sort());
      }
      const arrived = rec.requests.filter((q) => q.answer !== 503).length;
      process.stdout.write(
        `notifications on three replicas: ${before.length} deliveries queued, ${arrived} arrived (${arrived - before.length} duplicates), ${rec.requests.filter((q) => q.at > killedAt).length} sent by the new leader\n`,
      );
    } finally {
      await direct.end();
    }
  }, 300_000);
});
