import { KIND_SERVED_RESOURCES } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseMemberKubeconfig } from '../../src/clusters/credentials.js';
import type { ConnectionSnapshot } from '../../src/clusters/MemberConnection.js';
import { fingerprintOf, type MemberClusters as Members, MemberClusters, type MemberCredentials } from '../../src/clusters/MemberClusters.js';
import type { ClusterHealth } from '../../src/domain/clusters/model.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { startMemberProxy, type MemberProxy } from '../helpers/memberProxy.js';
import { until } from '../helpers/until.js';

/**
 * Member clusters for real (docs/adr/0048-member-clusters.md): three simulators on port 0 as members, one behind a
 * proxy that can answer 401 or never answer. Each connection has its own client and budget; one member's failure
 * changes its own health only. Waits on health changes and probes, never on time.
 */

const PLANTED = 'planted-member-token-7f3c9b1e2d';
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member clusters '));
const logLines: string[] = [];
const logger = pino(
  { level: 'trace' },
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  }),
);

function credentials(server: string, token = 'rollplane-sim-token'): MemberCredentials {
  const text = stringify(kubeconfigFor(server, token));
  return { kubeConfig: parseMemberKubeconfig(text, `test ${server}`, { allowExecPlugins: false }), fingerprint: fingerprintOf(text) };
}

const OPTIONS = {
  qps: 20,
  burst: 40,
  // Long enough that a loaded machine's in-process simulators answer in time; only the black hole runs into it.
  requestTimeoutMs: 1_500,
  probeIntervalMs: 150,
  backoffBaseMs: 50,
  backoffMaxMs: 400,
  versions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
  kindResources: KIND_SERVED_RESOURCES,
  random: () => 0.5, // no jitter: the delays are the schedule's own
};

describe('member cluster connections', () => {
  let full: Simulator;
  let bare: Simulator;
  let behind: Simulator;
  let proxy: MemberProxy;
  let db: SqliteDatabase;
  let members: Members;
  const probes: ConnectionSnapshot[] = [];
  const changes: { name: string; health: ClusterHealth }[] = [];
  const registry = new Registry();

  beforeAll(async () => {
    [full, bare, behind] = await Promise.all([
      startSimulator({ behaviour: false }),
      // No project CRDs: no IPPools and no VirtualClusters, so only node agents.
      startSimulator({ behaviour: false, crds: false }),
      startSimulator({ behaviour: false }),
    ]);
    proxy = await startMemberProxy(behind.url);
    db = await openSqliteDatabase(`file:${path.join(dir, 'members.db')}`);
    for (const name of ['full', 'bare', 'behind']) await db.memberClusters.put({ name, labels: {}, source: 'FILE', sourceRef: 'test' }, new Date());
    members = new MemberClusters({
      ...OPTIONS,
      logger,
      registry,
      recordHealth: (name, health) => db.memberClusters.recordHealth(name, health),
      onProbed: (snapshot) => probes.push(snapshot),
    });
    members.onHealth((name, health) => changes.push({ name, health }));
    members.reconcile(
      new Map([
        ['full', credentials(full.url)],
        ['bare', credentials(bare.url)],
        ['behind', credentials(proxy.url, PLANTED)],
      ]),
    );
  });
  afterAll(async () => {
    await members?.stop();
    await proxy?.close();
    await Promise.all([full, bare, behind].map((sim) => sim?.stop()));
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const stateOf = (name: string) => members.get(name)?.health().state;
  const waitFor = (name: string, state: ClusterHealth['state']) =>
    until(`${name} ${state} (is ${stateOf(name)})`, () => (stateOf(name) === state ? members.get(name)!.health() : undefined));
  /** Waits until `name` has been probed `count` more times and answered each time. */
  const probedReady = async (name: string, count: number) => {
    const from = probes.length;
    await until(`${count} more ready probes of ${name}`, () => probes.slice(from).filter((p) => p.name === name && p.health.state === 'READY').length >= count);
  };

  it('connects each member, discovers the kinds it serves and records its health', async () => {
    const [f, b, h] = await Promise.all([waitFor('full', 'READY'), waitFor('bare', 'READY'), waitFor('behind', 'READY')]);
    expect(f.kinds).toEqual(['AGENT_POOL', 'NODE_AGENT', 'VIRTUAL_CLUSTER']);
    expect(b.kinds).toEqual(['NODE_AGENT']);
    expect(h.serverVersion).toBe('v1.31.0-rollplane-sim');
    // Every member's first state was CONNECTING.
    for (const name of ['full', 'bare', 'behind']) expect(changes.find((c) => c.name === name)?.health.state).toBe('CONNECTING');
    await until('the store has the three READY', async () => (await db.memberClusters.list()).every((c) => c.health.state === 'READY'));
    expect((await db.memberClusters.find('bare'))?.health.kinds).toEqual(['NODE_AGENT']);
    // The token went to the cluster it belongs to (so the scan below could find it if it leaked).
    expect(proxy.authorizations).toContain(`Bearer ${PLANTED}`);
    const metrics = await registry.getSingleMetricAsString('rollplane_cluster_up');
    expect(metrics).toContain('rollplane_cluster_up{cluster="bare"} 1');
  });

  it('a stopped member becomes UNREACHABLE since its first failure, backs off exponentially, and the others stay ready', async () => {
    const from = probes.length;
    await full.stop();
    const down = await waitFor('full', 'UNREACHABLE');
    expect(down.message).toBe('ECONNREFUSED');
    expect(down.kinds).toEqual(['AGENT_POOL', 'NODE_AGENT', 'VIRTUAL_CLUSTER']); // what it served when it last answered
    await until('five failed probes of full', () => probes.slice(from).filter((p) => p.name === 'full' && p.failures > 0).length >= 5);
    const failed = probes.slice(from).filter((p) => p.name === 'full' && p.failures > 0);
    expect(failed.slice(0, 5).map((p) => [p.failures, p.nextProbeInMs])).toEqual([
      [1, 50],
      [2, 100],
      [3, 200],
      [4, 400],
      [5, 400],
    ]);
    // "Unreachable since" is the first failure's time, however many followed.
    expect(new Set(failed.map((p) => p.health.since.getTime())).size).toBe(1);
    // The others went on answering on their own schedules meanwhile.
    await Promise.all([probedReady('bare', 2), probedReady('behind', 2)]);
    await until('the store says full is UNREACHABLE', async () => (await db.memberClusters.find('full'))?.health.state === 'UNREACHABLE');
    expect(await registry.getSingleMetricAsString('rollplane_cluster_up')).toContain('rollplane_cluster_up{cluster="full"} 0');
  });

  it('a member answering 401 is UNAUTHORIZED; one that never answers is UNREACHABLE after the request timeout; neither holds the others up', async () => {
    proxy.mode = 'unauthorized';
    expect((await waitFor('behind', 'UNAUTHORIZED')).message).toBe('HTTP 401: the credentials were refused');
    proxy.mode = 'blackhole';
    const hole = await waitFor('behind', 'UNREACHABLE');
    expect(hole.message).toBe('no answer within 1500 ms');
    proxy.mode = 'pass';
    await waitFor('behind', 'READY');
    expect(members.snapshots().find((s) => s.name === 'behind')?.failures).toBe(0);
  });

  it('a member whose request hangs holds up no other member, and stopping does not wait for it', async () => {
    proxy.mode = 'blackhole';
    const seen: ConnectionSnapshot[] = [];
    // A timeout longer than the test: behind's first probe hangs for as long as the test looks.
    const patient = new MemberClusters({ ...OPTIONS, requestTimeoutMs: 600_000, logger, recordHealth: async () => {}, onProbed: (p) => seen.push(p) });
    try {
      const before = proxy.requests;
      patient.reconcile(
        new Map([
          ['behind', credentials(proxy.url, PLANTED)],
          ['bare', credentials(bare.url)],
        ]),
      );
      await until('behind has a request in flight', () => proxy.requests > before);
      await until('three probes of bare', () => seen.filter((p) => p.name === 'bare' && p.health.state === 'READY').length >= 3);
      expect(seen.filter((p) => p.name === 'behind')).toEqual([]);
      expect(patient.snapshots().find((p) => p.name === 'behind')).toMatchObject({ health: { state: 'CONNECTING' }, nextProbeInMs: undefined });
    } finally {
      await patient.stop(); // aborts behind's hanging request instead of waiting for it
      proxy.mode = 'pass';
    }
  });

  it('keeps one connection to a member across probes, and closes it when the member goes', async () => {
    const front = await startMemberProxy(bare.url);
    const seen: ConnectionSnapshot[] = [];
    const solo = new MemberClusters({ ...OPTIONS, logger, recordHealth: async () => {}, onProbed: (p) => seen.push(p) });
    try {
      solo.reconcile(new Map([['solo', credentials(front.url)]]));
      await until('three ready probes', () => seen.filter((p) => p.health.state === 'READY').length >= 3);
      // Four requests a probe (/version and three discovery reads) over the connection of the first.
      expect(front.requests).toBeGreaterThanOrEqual(12);
      expect(front.connections).toBeLessThan(front.requests / 4);
      solo.reconcile(new Map());
      await until('the member connection closed', () => front.openConnections === 0, 5_000);
    } finally {
      await solo.stop();
      await front.close();
    }
  });

  it('a member whose Kubernetes is outside the supported window is VERSION_SKEW', async () => {
    const skewed = new MemberClusters({
      ...OPTIONS,
      versions: { min: { major: 1, minor: 32 }, max: { major: 1, minor: 34 } },
      logger,
      recordHealth: async () => {},
    });
    try {
      skewed.reconcile(new Map([['bare', credentials(bare.url)]]));
      await until('VERSION_SKEW', () => skewed.get('bare')?.health().state === 'VERSION_SKEW');
      expect(skewed.get('bare')?.health()).toMatchObject({
        serverVersion: 'v1.31.0-rollplane-sim',
        message: 'Kubernetes v1.31.0-rollplane-sim is outside 1.32-1.34',
      });
    } finally {
      await skewed.stop();
    }
  });

  it('reconcile keeps unchanged credentials, reconnects changed ones, and drops removed members and their series', async () => {
    const before = members.get('bare');
    members.reconcile(
      new Map([
        ['bare', credentials(bare.url)],
        ['behind', credentials(proxy.url, `${PLANTED}-rotated`)],
      ]),
    );
    expect(members.get('bare')).toBe(before);
    expect(members.get('full')).toBeUndefined();
    await until('the rotated token is used', () => proxy.authorizations.has(`Bearer ${PLANTED}-rotated`));
    await waitFor('behind', 'READY');
    expect(await registry.getSingleMetricAsString('rollplane_cluster_up')).not.toContain('cluster="full"');
  });

  it('never logs, records or reports a credential', async () => {
    const rows = JSON.stringify(await db.memberClusters.list());
    const reported = JSON.stringify([changes, probes, members.snapshots(), await registry.metrics()]);
    expect(logLines.length).toBeGreaterThan(0);
    for (const text of [logLines.join(''), rows, reported]) {
      expect(text).not.toContain(PLANTED);
      expect(text).not.toContain(proxy.url.replace('http://', '')); // nor the member's address
    }
  });
});

// Attack 13, F4: 1,000 members probed in one timer tick stalled the event loop (and /healthz) for 340-400 ms; first
// probes now go out in batches of 20, 10 ms apart (1,000 over half a second: the stall measured 41 ms).
describe('many new member clusters at once', () => {
  it('send their first probes in small batches, one batch a tick, the first at once', async () => {
    const many = new MemberClusters({ ...OPTIONS, logger, recordHealth: async () => {} });
    try {
      // Nothing listens on port 9 of loopback (discard): no probe is answered, and none is sent before its time.
      const desired = new Map(Array.from({ length: 50 }, (_, i) => [`m${String(i).padStart(2, '0')}`, credentials('http://127.0.0.1:9')] as const));
      many.reconcile(desired);
      const firstProbeIn = many.snapshots().map((s) => s.nextProbeInMs);
      expect(firstProbeIn).toEqual([...Array(20).fill(0), ...Array(20).fill(10), ...Array(10).fill(20)]);
    } finally {
      await many.stop();
    }
  });
});
