import { KIND_SERVED_RESOURCES } from '../../src/kinds/index.js';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fingerprintOf, MemberClusters } from '../../src/clusters/MemberClusters.js';
import { MemberClusterSync, type SyncPass } from '../../src/clusters/MemberClusterSync.js';
import { credentialsFile, ensureCredentialsFile } from '../../src/clusters/sources/credentialsFile.js';
import { capiKubeconfigSecrets, memberClusterSecrets } from '../../src/clusters/sources/secretSources.js';
import { MemberClusterRegistry } from '../../src/domain/clusters/MemberClusterRegistry.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { startMemberProxy, type MemberProxy } from '../helpers/memberProxy.js';
import { until } from '../helpers/until.js';

/**
 * Registration where users keep credentials (docs/adr/0048-member-clusters.md): labelled Secrets in rollplane's
 * namespace, Cluster API `<name>-kubeconfig` Secrets, and the embedded mode's 0600 credentials file — on a simulator
 * as the management cluster, with another simulator (behind a proxy that records the token it is sent) as the member.
 */

const PLANTED = 'planted-secret-token-9a8b7c6d5e';
const NS = 'rollplane-system';
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member sources '));
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

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('member cluster sources', () => {
  let management: Simulator;
  let member: Simulator;
  let proxy: MemberProxy;
  /** More doors to the one member: each is another API server URL, as separate clusters would have. */
  const doors: Record<string, MemberProxy> = {};
  let db: SqliteDatabase;
  let core: CoreV1Api;
  let connections: MemberClusters;
  let sync: MemberClusterSync;
  const file = path.join(dir, 'data', 'member-clusters.yaml');
  const passes: SyncPass[] = [];
  /** A kubeconfig for the member through `door` (a cluster registered twice under two names is refused). */
  const memberConfig = (token = PLANTED, door?: string) => stringify(kubeconfigFor(door ? doors[door]!.url : proxy.url, token));
  const syncNow = async () => {
    const pass = await sync.syncNow();
    passes.push(pass);
    return pass;
  };
  const names = async () => (await db.memberClusters.list()).map((c) => `${c.name}:${c.source}`);

  beforeAll(async () => {
    [management, member] = await Promise.all([startSimulator({ behaviour: false }), startSimulator({ behaviour: false })]);
    proxy = await startMemberProxy(member.url);
    for (const door of ['capi', 'file', 'shared', 'victim', 'twin']) doors[door] = await startMemberProxy(member.url);
    db = await openSqliteDatabase(`file:${path.join(dir, 'data', 'rollplane.db')}`);
    core = management.kubeConfig.makeApiClient(CoreV1Api);
    for (const name of [NS, 'fleet']) await core.createNamespace({ body: { metadata: { name } } });
    const registry = new MemberClusterRegistry(db.memberClusters);
    await registry.ensureLocal();
    connections = new MemberClusters({
      qps: 20,
      burst: 40,
      requestTimeoutMs: 2_000,
      probeIntervalMs: 200,
      backoffBaseMs: 50,
      backoffMaxMs: 400,
      versions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
      kindResources: KIND_SERVED_RESOURCES,
      logger,
      recordHealth: (name, health) => registry.recordHealth(name, health),
    });
    await ensureCredentialsFile(file);
    sync = new MemberClusterSync({
      registry,
      connections,
      sources: [memberClusterSecrets(core, NS), capiKubeconfigSecrets(core, ['fleet']), credentialsFile(file)],
      rules: { allowExecPlugins: false },
      local: { kubeConfig: management.kubeConfig, fingerprint: 'local' },
      logger,
    });
  });
  afterAll(async () => {
    await sync?.stop();
    await connections?.stop();
    await proxy?.close();
    for (const door of Object.values(doors)) await door.close();
    await Promise.all([management?.stop(), member?.stop()]);
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates the credentials file readable by its owner only', () => {
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('registers a labelled Secret, a CAPI kubeconfig Secret and a file entry, refuses an exec plugin, and connects them', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'edge-1', labels: { 'rollplane.io/member-cluster': 'true', env: 'prod' }, annotations: { 'rollplane.io/cluster-name': 'edge-one' } },
        data: { kubeconfig: b64(memberConfig()) },
      },
    });
    const exec = kubeconfigFor(proxy.url, PLANTED) as { users: { user: unknown }[] };
    exec.users[0]!.user = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'sh', args: ['-c', `echo ${PLANTED}`] } };
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'runs-a-command', labels: { 'rollplane.io/member-cluster': 'true' } }, data: { kubeconfig: b64(stringify(exec)) } },
    });
    // Not labelled for rollplane: not a member.
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'unrelated' }, data: { kubeconfig: b64(memberConfig()) } } });
    await core.createNamespacedSecret({
      namespace: 'fleet',
      body: {
        metadata: { name: 'workload-a-kubeconfig', labels: { 'cluster.x-k8s.io/cluster-name': 'workload-a' } },
        type: 'cluster.x-k8s.io/secret',
        data: { value: b64(memberConfig(PLANTED, 'capi')) },
      },
    });
    writeFileSync(file, stringify({ clusters: [{ name: 'file-1', labels: { tier: 'edge' }, kubeconfig: kubeconfigFor(doors.file!.url, PLANTED) }] }));

    const pass = await syncNow();
    expect(pass.unreadable).toEqual([]);
    expect(pass.refused).toEqual([
      {
        name: 'runs-a-command',
        sourceRef: `${NS}/runs-a-command`,
        reason: expect.stringContaining('uses an exec credential plugin, which would run a command inside rollplane; refused'),
      },
    ]);
    expect(await names()).toEqual(['edge-one:SECRET', 'file-1:FILE', 'local:LOCAL', 'workload-a:CAPI']);
    expect((await db.memberClusters.find('edge-one'))?.labels).toEqual({ env: 'prod' });
    expect((await db.memberClusters.find('workload-a'))?.labels).toEqual({ 'rollplane.io/capi-namespace': 'fleet' });
    expect((await db.memberClusters.find('file-1'))?.sourceRef).toBe(`${file}#clusters[0]`);
    await until('every member READY', () => ['local', 'edge-one', 'workload-a', 'file-1'].every((n) => connections.get(n)?.health().state === 'READY'));
    expect(connections.get('runs-a-command')).toBeUndefined();
    expect(proxy.authorizations).toContain(`Bearer ${PLANTED}`);
  });

  it('keeps what it had when a Secret turns bad, reconnects when it changes, and deregisters when it goes', async () => {
    const before = connections.get('edge-one');
    const replaceKubeconfig = async (text: string) => {
      const secret = await core.readNamespacedSecret({ namespace: NS, name: 'edge-1' });
      secret.data = { kubeconfig: b64(text) };
      await core.replaceNamespacedSecret({ namespace: NS, name: 'edge-1', body: secret });
    };
    await replaceKubeconfig(`users:\n- user:\n    token: ${PLANTED}\n  bad: [\n`);
    const bad = await syncNow();
    expect(bad.refused.map((r) => [r.name, r.reason])).toContainEqual([
      'edge-one',
      expect.stringMatching(/^rollplane-system\/edge-1: the kubeconfig is not valid YAML \(line \d+\)$/),
    ]);
    expect(connections.get('edge-one')).toBe(before);
    expect(await names()).toContain('edge-one:SECRET');

    await replaceKubeconfig(memberConfig(`${PLANTED}-rotated`));
    await syncNow();
    expect(connections.get('edge-one')).not.toBe(before);
    await until('the rotated token is used', () => proxy.authorizations.has(`Bearer ${PLANTED}-rotated`));

    await core.deleteNamespacedSecret({ namespace: NS, name: 'edge-1' });
    await core.deleteNamespacedSecret({ namespace: 'fleet', name: 'workload-a-kubeconfig' });
    await syncNow();
    expect(await names()).toEqual(['file-1:FILE', 'local:LOCAL']);
    expect(connections.get('edge-one')).toBeUndefined();
    expect(connections.get('workload-a')).toBeUndefined();
  });

  // Attack 13: F3 (one unreadable Secret froze its whole source: a deleted Secret's token stayed in use), F6 (a Secret
  // whose name sorts first took over a registered cluster by claiming its name, silently), F10 (a Secret could label
  // itself as a Cluster API registration).
  it('refuses one bad or conflicting Secret alone: the others sync, the holder of a name keeps it, rollplane.io/ labels are not taken', async () => {
    const secret = async (name: string, kubeconfig: string, extra: { annotations?: Record<string, string>; labels?: Record<string, string> } = {}) =>
      core.createNamespacedSecret({
        namespace: NS,
        body: {
          metadata: {
            name,
            labels: { 'rollplane.io/member-cluster': 'true', ...extra.labels },
            ...(extra.annotations ? { annotations: extra.annotations } : {}),
          },
          data: { kubeconfig: b64(kubeconfig) },
        },
      });
    await secret('shared-b', memberConfig(PLANTED, 'shared'), {
      annotations: { 'rollplane.io/cluster-name': 'shared' },
      labels: { env: 'x', 'rollplane.io/capi-namespace': 'posing' },
    });
    await secret('victim', memberConfig(PLANTED, 'victim'));
    await syncNow();
    expect(await names()).toEqual(expect.arrayContaining(['shared:SECRET', 'victim:SECRET']));
    expect((await db.memberClusters.find('shared'))?.labels).toEqual({ env: 'x' });
    const holder = connections.get('shared');
    expect(holder).toBeDefined();

    // Sorts before the holder, claims its name with other credentials.
    await secret('shared-a', memberConfig(`${PLANTED}-usurper`), { annotations: { 'rollplane.io/cluster-name': 'shared' } });
    await secret('claims-local', memberConfig(), { annotations: { 'rollplane.io/cluster-name': 'local' } });
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    await secret('bomb', bomb.join('\n'));
    const pass = await syncNow();
    expect(pass.unreadable).toEqual([]);
    expect(pass.refused).toEqual(
      expect.arrayContaining([
        { name: 'shared', sourceRef: `${NS}/shared-a`, reason: `${NS}/shared-a: the name "shared" is taken by ${NS}/shared-b` },
        { name: 'local', sourceRef: `${NS}/claims-local`, reason: expect.stringContaining('the name "local" is taken by the cluster rollplane runs in') },
        { name: 'bomb', sourceRef: `${NS}/bomb`, reason: expect.stringContaining('anchors, aliases and merge keys are not accepted') },
      ]),
    );
    expect(connections.get('shared')).toBe(holder);
    expect((await db.memberClusters.find('local'))?.source).toBe('LOCAL');

    // With the bomb still there, deleting a Secret deregisters it.
    await core.deleteNamespacedSecret({ namespace: NS, name: 'victim' });
    await syncNow();
    expect(await names()).not.toContain('victim:SECRET');
    expect(connections.get('victim')).toBeUndefined();

    for (const name of ['shared-a', 'shared-b', 'claims-local', 'bomb']) await core.deleteNamespacedSecret({ namespace: NS, name });
    await syncNow();
    expect(await names()).toEqual(['file-1:FILE', 'local:LOCAL']);
    expect(proxy.authorizations.has(`Bearer ${PLANTED}-usurper`)).toBe(false);
  });

  // Attack 20, F6: the API refused a second name for a registered cluster's API server, the Secret and file sources
  // did not: one cluster registered twice is driven twice.
  it('refuses a second name for an API server already registered, from a Secret or the file, and keeps the first', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'twin-of-file-1', labels: { 'rollplane.io/member-cluster': 'true' } },
        data: { kubeconfig: b64(memberConfig(PLANTED, 'file')) },
      },
    });
    const entries = [
      { name: 'file-1', labels: { tier: 'edge' }, kubeconfig: kubeconfigFor(doors.file!.url, PLANTED) },
      { name: 'twin-a', kubeconfig: kubeconfigFor(doors.twin!.url, PLANTED) },
      { name: 'twin-b', kubeconfig: kubeconfigFor(doors.twin!.url.replace('127.0.0.1', 'localhost'), PLANTED) },
    ];
    writeFileSync(file, stringify({ clusters: entries }), { mode: 0o600 });
    const pass = await syncNow();
    expect(pass.refused).toEqual(
      expect.arrayContaining([
        { name: 'twin-of-file-1', sourceRef: `${NS}/twin-of-file-1`, reason: expect.stringContaining('its API server is the one of member cluster "file-1"') },
        { name: 'twin-b', sourceRef: `${file}#clusters[2]`, reason: expect.stringContaining('its API server is the one of member cluster "twin-a"') },
      ]),
    );
    expect(await names()).toEqual(['file-1:FILE', 'local:LOCAL', 'twin-a:FILE']);
    expect(connections.get('twin-b')).toBeUndefined();
    expect(connections.get('twin-of-file-1')).toBeUndefined();
    // Changes nothing on the next pass either.
    await syncNow();
    expect(await names()).toEqual(['file-1:FILE', 'local:LOCAL', 'twin-a:FILE']);
    await core.deleteNamespacedSecret({ namespace: NS, name: 'twin-of-file-1' });
    writeFileSync(file, stringify({ clusters: [entries[0]] }), { mode: 0o600 });
    await syncNow();
    expect(await names()).toEqual(['file-1:FILE', 'local:LOCAL']);
  });

  it('refuses a credentials file that group or others may read, with a clear error, and changes nothing', async () => {
    chmodSync(file, 0o644);
    try {
      const pass = await syncNow();
      expect(pass.unreadable).toEqual([
        {
          source: 'FILE',
          reason: `the member cluster credentials file ${file} is readable or writable by its group or others (mode 0644); run chmod 600 ${file}`,
        },
      ]);
      expect(await names()).toContain('file-1:FILE');
      expect(connections.get('file-1')).toBeDefined();
    } finally {
      chmodSync(file, 0o600);
    }
    // Removing the file removes its clusters (attack 13, F8: they stayed for good); an empty file registers none either.
    rmSync(file);
    const gone = await syncNow();
    expect(gone.unreadable).toEqual([]);
    expect(await names()).toEqual(['local:LOCAL']);
    expect(connections.get('file-1')).toBeUndefined();
    writeFileSync(file, 'clusters: []\n', { mode: 0o600 });
    await syncNow();
    expect(await names()).toEqual(['local:LOCAL']);
  });

  it('never logs, stores or reports a credential', async () => {
    // Each refusal said once, however many passes met it.
    const refusals = logLines.filter((line) => line.includes('member cluster registration refused'));
    expect(refusals.filter((line) => line.includes('runs-a-command'))).toHaveLength(1);
    const texts = [logLines.join(''), JSON.stringify(passes), JSON.stringify(await db.memberClusters.list()), JSON.stringify(connections.snapshots())];
    for (const text of texts) expect(text).not.toContain(PLANTED);
    expect(fingerprintOf(PLANTED)).not.toContain(PLANTED);
  });
});
