import net from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { BUMP, FAST_ENV, NEW, ROLLOUT, startRig, type Rig } from './agentPool/rig.js';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { gql } from '../helpers/graphql.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { isLeader, LEASE_ENV, START_TIMEOUT_MS } from './replicas.js';

const POOLS = 3;

/**
 * A TCP relay to PostgreSQL that can be cut without closing anything: bytes stop flowing both ways, as across a
 * partition that drops packets (the connections stay open, nothing answers).
 */
async function partitionableRelay(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  let cut = false;
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => {
        if (!cut) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((relay.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    cut: () => {
      cut = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}

describeWithPostgres('a leader cut off from PostgreSQL', (server) => {
  let rig: Rig | undefined;
  const services: ServiceProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) {
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
      await service.exited;
    }
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await rig?.close();
    rig = undefined;
  });

  it('gives up the lease, and the replica that can reach the database runs the rollout (attack 10, F3)', async () => {
    const url = await server().createDatabase();
    rig = await startRig({ fleet: `pools=${POOLS},nodes=1`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const relay = await partitionableRelay(new URL(url));
    cleanups.push(() => relay.close());
    const env = { ...FAST_ENV, ...LEASE_ENV, HOST: '127.0.0.1', ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: rig.sim.kubeconfigPath };
    // A reaches PostgreSQL through the relay and leads first; B connects directly.
    const a = await startService({ ...env, DATABASE_URL: relay.url }, START_TIMEOUT_MS);
    services.push(a);
    await until('A to lead', () => isLeader(a));
    const b = await startService({ ...env, DATABASE_URL: url }, START_TIMEOUT_MS);
    services.push(b);
    expect(await isLeader(b)).toBe(false);

    // A still reaches the Kubernetes API (it could keep renewing the lease), but not its database.
    relay.cut();
    await until('B to lead', () => isLeader(b), 20_000);
    expect(await isLeader(a)).toBe(false);

    const bump = await gql(b.url, BUMP, { input: { image: NEW, cause: { actor: 'ci' }, idempotencyKey: 'leader-without-database' } });
    expect(bump.errors).toBeUndefined();
    const id = bump.data.bumpAgentImage.rollout.id as string;
    const done = await until(
      'the rollout to finish while A is cut off',
      async () => {
        const state = (await gql(b.url, ROLLOUT, { id })).data?.rollout?.state;
        return ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'].includes(state) ? state : undefined;
      },
      60_000,
    );
    expect(done).toBe('SUCCEEDED');
    expect(await isLeader(a)).toBe(false);
  }, 240_000);
});
