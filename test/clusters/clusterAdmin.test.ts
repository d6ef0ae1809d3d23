import { KIND_SERVED_RESOURCES } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { memberClusterAdmin } from '../../src/clusters/clusterAdmin.js';
import { MemberClusters } from '../../src/clusters/MemberClusters.js';
import { MemberClusterSync } from '../../src/clusters/MemberClusterSync.js';
import { MemberNetwork } from '../../src/clusters/memberNetwork.js';
import { apiCredentialsInSecrets, apiSecretName } from '../../src/clusters/sources/apiCredentials.js';
import { memberClusterSecrets } from '../../src/clusters/sources/secretSources.js';
import { MemberClusterAdmin } from '../../src/domain/clusters/MemberClusterAdmin.js';
import { MemberClusterRegistry } from '../../src/domain/clusters/MemberClusterRegistry.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { type MemberProxy, startMemberProxy } from '../helpers/memberProxy.js';

/**
 * In a cluster, API-registered credentials are Secrets in rollplane's namespace (docs/adr/0056-clusters-api.md):
 * registerCluster writes one, the API source reads it back (the Secret source leaves it alone), relabelling and
 * deregistering change and delete it; a person's Secret is refused (CONFLICT naming it) and left as it is; a cluster
 * with an active rollout cannot be deregistered (the `activeRolloutIds` port).
 */

const NS = 'rollplane-system';
const PLANTED = 'planted-secret-backed-token-0b7e4c21';
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-cluster-admin-'));

describe('API-registered member clusters kept as Secrets', () => {
  let management: Simulator;
  let member: Simulator;
  /** Another door to the member: the person's Secret names a cluster of its own (one server under two names is refused). */
  let byHandDoor: MemberProxy;
  let db: SqliteDatabase;
  let core: CoreV1Api;
  let connections: MemberClusters;
  let sync: MemberClusterSync;
  let admin: MemberClusterAdmin;
  const active = new Map<string, string[]>();
  const memberConfig = () => stringify(kubeconfigFor(member.url, PLANTED));
  const secrets = async () =>
    (await core.listNamespacedSecret({ namespace: NS })).items.map((s) => `${s.metadata?.name}:${JSON.stringify(s.metadata?.annotations ?? {})}`).sort();
  const names = async () => (await admin.list()).map((c) => `${c.name}:${c.source}:${JSON.stringify(c.labels)}`);

  beforeAll(async () => {
    [management, member] = await Promise.all([startSimulator({ behaviour: false }), startSimulator({ behaviour: false })]);
    byHandDoor = await startMemberProxy(member.url);
    db = await openSqliteDatabase(`file:${path.join(dir, 'rollplane.db')}`);
    core = management.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    const registry = new MemberClusterRegistry(db.memberClusters);
    await registry.ensureLocal();
    const connectionOptions = {
      qps: 20,
      burst: 40,
      requestTimeoutMs: 2_000,
      probeIntervalMs: 200,
      backoffBaseMs: 50,
      backoffMaxMs: 400,
      versions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
      kindResources: KIND_SERVED_RESOURCES,
      network: new MemberNetwork({ denyNetworks: [], maxDiscoveryBytes: 1_048_576 }),
    };
    const logger = pino({ level: 'silent' });
    connections = new MemberClusters({ ...connectionOptions, logger, recordHealth: (name, health) => registry.recordHealth(name, health) });
    const credentials = apiCredentialsInSecrets(core, NS);
    sync = new MemberClusterSync({
      registry,
      connections,
      sources: [memberClusterSecrets(core, NS), credentials.reader],
      rules: { allowExecPlugins: false },
      local: { kubeConfig: management.kubeConfig, fingerprint: 'local' },
      logger,
    });
    await sync.syncNow();
    admin = memberClusterAdmin({
      registry,
      sync,
      connections,
      credentials,
      rules: { allowExecPlugins: false },
      network: connectionOptions.network,
      connectionOptions,
      activeRolloutIds: async (cluster) => active.get(cluster) ?? [],
    });
  });
  afterAll(async () => {
    await sync?.stop();
    await connections?.stop();
    await byHandDoor?.close();
    await Promise.all([management?.stop(), member?.stop()]);
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers a cluster as a marked Secret the API source reads back, not the Secret source', async () => {
    const record = await admin.register({ name: 'edge-1', kubeconfig: memberConfig(), labels: { env: 'prod' }, verify: true });
    expect(record).toMatchObject({ name: 'edge-1', source: 'API', sourceRef: `${NS}/${apiSecretName('edge-1')}`, labels: { env: 'prod' } });
    const secret = await core.readNamespacedSecret({ name: apiSecretName('edge-1'), namespace: NS });
    expect(secret.metadata?.labels).toEqual({ 'rollplane.io/member-cluster': 'true', 'rollplane.io/registered-by': 'api' });
    expect(Buffer.from(secret.data!.kubeconfig!, 'base64').toString()).toContain(PLANTED);
    expect((await sync.syncFresh()).refused).toEqual([]);
    expect(await names()).toEqual(['edge-1:API:{"env":"prod"}', 'local:LOCAL:{}']);
  });

  it('refuses a second name for a cluster registered already (its server), and changes nothing', async () => {
    const before = { names: await names(), secrets: await secrets() };
    // The same server, written another way (a trailing slash, upper case): one cluster under two names is driven twice.
    const again = stringify(kubeconfigFor(`${member.url.toUpperCase().replace('HTTP://', 'http://')}/`, PLANTED));
    // Other names of the same address (attack 20, F6): the host name, the IPv4-mapped IPv6 form, the unspecified address.
    const port = new URL(member.url).port;
    const spellings = [`http://localhost:${port}`, `http://[::ffff:127.0.0.1]:${port}`, `http://0.0.0.0:${port}`].map((url) =>
      stringify(kubeconfigFor(url, PLANTED)),
    );
    for (const kubeconfig of [memberConfig(), again, ...spellings]) {
      await expect(admin.register({ name: 'edge-1-again', kubeconfig, labels: {}, verify: false })).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('member cluster "edge-1" is registered with'),
        details: { field: 'input.kubeconfig', cluster: 'edge-1' },
      });
    }
    expect(await names()).toEqual(before.names);
    expect(await secrets()).toEqual(before.secrets);
  });

  it("refuses to change a person's Secret-registered cluster, naming it, and leaves the Secret as it is", async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'by-hand', labels: { 'rollplane.io/member-cluster': 'true', team: 'a' } },
        data: { kubeconfig: Buffer.from(stringify(kubeconfigFor(byHandDoor.url, PLANTED))).toString('base64') },
      },
    });
    await sync.syncFresh();
    const before = { names: await names(), secrets: await secrets() };
    await expect(admin.updateLabels('by-hand', { team: 'b' }, [])).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining(`SECRET (${NS}/by-hand)`),
    });
    await expect(admin.deregister('by-hand')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(admin.register({ name: 'by-hand', kubeconfig: memberConfig(), labels: {}, verify: false })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await names()).toEqual(before.names);
    expect(await secrets()).toEqual(before.secrets);
  });

  it('refuses to deregister a cluster with an active rollout, and changes nothing', async () => {
    active.set('edge-1', ['ro_1', 'ro_2']);
    const before = { names: await names(), secrets: await secrets() };
    await expect(admin.deregister('edge-1')).rejects.toMatchObject({ code: 'CONFLICT', details: { rolloutIds: ['ro_1', 'ro_2'] } });
    expect(await names()).toEqual(before.names);
    expect(await secrets()).toEqual(before.secrets);
    active.delete('edge-1');
  });

  it('relabels through the Secret, then deregisters: the Secret is deleted and the cluster disconnected', async () => {
    const relabelled = await admin.updateLabels('edge-1', { tier: 'edge' }, ['env']);
    expect(relabelled.labels).toEqual({ tier: 'edge' });
    const secret = await core.readNamespacedSecret({ name: apiSecretName('edge-1'), namespace: NS });
    expect(secret.metadata?.annotations?.['rollplane.io/cluster-labels']).toBe('{"tier":"edge"}');
    await admin.deregister('edge-1');
    expect(await names()).toEqual(['by-hand:SECRET:{"team":"a"}', 'local:LOCAL:{}']);
    expect((await secrets()).map((s) => s.split(':')[0])).toEqual(['by-hand']);
    expect(connections.get('edge-1')).toBeUndefined();
  });
});

describe('with nowhere to keep credentials', () => {
  it('refuses to register (NOT_IMPLEMENTED, naming the settings) and changes nothing', async () => {
    const own = mkdtempSync(path.join(os.tmpdir(), 'rollplane-cluster-admin-nowhere-'));
    const db = await openSqliteDatabase(`file:${path.join(own, 'rollplane.db')}`);
    try {
      const registry = new MemberClusterRegistry(db.memberClusters);
      const admin = new MemberClusterAdmin({
        registry,
        credentials: undefined,
        checkKubeconfig: async () => {},
        probe: async () => {
          throw new Error('not probed');
        },
        sync: async () => ({ refused: [] }),
        activeRolloutIds: async () => [],
        size: () => 0,
      });
      await expect(admin.register({ name: 'edge-9', kubeconfig: 'x', labels: {}, verify: false })).rejects.toMatchObject({
        code: 'NOT_IMPLEMENTED',
        message: expect.stringContaining('ROLLPLANE_MEMBER_CLUSTER_SECRETS'),
      });
      expect(await registry.list()).toEqual([]);
    } finally {
      await db.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
