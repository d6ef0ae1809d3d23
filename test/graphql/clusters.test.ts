import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { openTestPrisma } from '../helpers/prisma.js';
import { gql, wsClient } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

/**
 * The member cluster registry over GraphQL (docs/adr/0056-clusters-api.md), against the real server on port 0 and
 * simulated member clusters (src/sim/simulatedClusters.ts): registration, relabelling and deregistration by an admin
 * through the API source and the credentials file; bad input changes nothing (registry and file unchanged); non-admins
 * and aliases/fragments are refused; a planted token never appears in a response, the log, the audit log or /metrics.
 */

const ADMIN = 'admin-secret-for-member-clusters-0123456789';
const PLANTED = 'planted-member-token-7d3f0c9a51e24b6e8f';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const FIELDS = 'name labels { key value } source sourceRef health { state since message serverVersion } kinds createdAt updatedAt';
const REGISTER = `mutation($input: RegisterClusterInput!) { registerCluster(input: $input) { ${FIELDS} } }`;

let dir: string;
let fleet: SimulatedClusters;
let app: App;
let url: string;
let viewer: string;
let config: ReturnType<typeof loadConfig>;
const logs: string[] = [];
const responses: string[] = [];

/** A simulated member's kubeconfig with the planted token as its user's credentials. */
function kubeconfigOf(name: string, token = PLANTED): string {
  const doc = parse(fleet.clusters.get(name)!.kubeconfig) as { users: { user: Record<string, unknown> }[] };
  doc.users[0]!.user = { token };
  return stringify(doc);
}

async function call(query: string, variables: Record<string, unknown> = {}, token = ADMIN) {
  const res = await gql(url, query, variables, bearer(token));
  responses.push(JSON.stringify(res));
  return res;
}

const file = () => path.join(dir, 'member-clusters.yaml');
const registry = async () => (await app.domain.clusters!.list()).map((c) => `${c.name}:${c.source}:${JSON.stringify(c.labels)}`);

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-clusters-api-'));
  fleet = await startSimulatedClusters({
    clusters: [
      { name: 'edge-a', labels: {}, fleet: 'empty', behaviour: false },
      { name: 'edge-b', labels: {}, fleet: 'empty', behaviour: false },
      // The person's own entry of the credentials file: a cluster of its own (one server under two names is refused).
      { name: 'edge-h', labels: {}, fleet: 'empty', behaviour: false },
    ],
  });
  config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
      ROLLPLANE_KUBE: 'sim',
      ROLLPLANE_SIM_FLEET: 'empty',
      ROLLPLANE_SIM_MEMBER_CLUSTERS: 'off',
      ROLLPLANE_CONTROLLERS: 'off',
      ROLLPLANE_AUTH: 'on',
      ROLLPLANE_MUTATION_BURST: '1000',
      ROLLPLANE_ADMIN_TOKEN: ADMIN,
      ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '200',
      ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '50',
      ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '60000',
      // Link-local, the metadata endpoint's network: the deny list's example.
      ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS: '169.254.0.0/16',
    },
    [],
  );
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  app = await startApp(config, { logger: pino({ level: 'trace' }, sink) });
  url = app.url;
  const created = await call('mutation { createApiToken(input: { name: "cluster-viewer", role: deployer }) { secret } }');
  viewer = created.data.createApiToken.secret;
});

afterAll(async () => {
  await app?.stop();
  await fleet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('clusters over GraphQL', () => {
  it('lists local, and registers a simulated member through the API: it is READY, kept in the 0600 file as the API source', async () => {
    const listed = await call(`{ clusters { ${FIELDS} } }`);
    expect(listed.data.clusters.map((c: { name: string; source: string }) => [c.name, c.source])).toEqual([['local', 'LOCAL']]);

    const res = await call(REGISTER, {
      input: {
        name: 'edge-a',
        kubeconfig: kubeconfigOf('edge-a'),
        labels: [
          { key: 'env', value: 'prod' },
          { key: 'region', value: 'eu' },
        ],
        verify: true,
      },
    });
    expect(res.errors).toBeUndefined();
    // Verified at registration: the answer says READY with the version it saw, not CONNECTING (attack 14, F6).
    expect(res.data.registerCluster.health).toMatchObject({ state: 'READY', serverVersion: expect.stringMatching(/^v1\./) });
    expect(res.data.registerCluster).toMatchObject({
      name: 'edge-a',
      source: 'API',
      labels: [
        { key: 'env', value: 'prod' },
        { key: 'region', value: 'eu' },
      ],
    });
    await until('edge-a READY', () => app.domain.clusters!.find('edge-a').then((c) => c?.health.state === 'READY'));
    const one = await call(`{ cluster(name: "edge-a") { ${FIELDS} } }`);
    expect(one.data.cluster.health.serverVersion).toMatch(/^v1\./);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    const written = parse(readFileSync(file(), 'utf8')) as { clusters: { name: string; managedBy: string }[] };
    expect(written.clusters.map((c) => [c.name, c.managedBy])).toEqual([['edge-a', 'rollplane-api']]);
  });

  it('filters by names and by a Kubernetes label selector; bad syntax is BAD_USER_INPUT with the position', async () => {
    const names = async (args: string) => (await call(`{ clusters${args} { name } }`)).data.clusters.map((c: { name: string }) => c.name);
    expect(await names('(selector: "env=prod,tier!=edge,region in (eu,us)")')).toEqual(['edge-a']);
    expect(await names('(selector: "!env")')).toEqual(['local']);
    expect(await names('(names: ["local", "nope"])')).toEqual(['local']);
    const bad = await call('{ clusters(selector: "env=prod,region in (eu") { name } }');
    expect(bad.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'selector', position: 22 });
    expect(bad.errors![0]!.message).toContain('at position 22');
    // As Kubernetes: an empty set of values is refused, not read as the one empty value (attack 14, F9).
    const empty = await call('{ clusters(selector: "tier in ()") { name } }');
    expect(empty.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'selector', position: 9 });
    expect(empty.errors![0]!.message).toContain('the values of in cannot be empty');
  });

  it('refuses bad registrations with a clear code and changes nothing (registry and file unchanged)', async () => {
    const before = { registry: await registry(), file: readFileSync(file(), 'utf8') };
    const kc = kubeconfigOf('edge-b');
    const exec = stringify({
      ...parse(kc),
      users: [{ name: 'u', user: { exec: { command: 'touch', args: ['/tmp/pwned'], apiVersion: 'client.authentication.k8s.io/v1' } } }],
    });
    const merge = `${kc}\nextra: &E { token: ${PLANTED} }\nother: *E\n`;
    const http = kc
      .replace(/server: https?:\/\/[^\n]+/, 'server: http://127.0.0.1:1')
      .replace(/insecure-skip-tls-verify: true/, 'insecure-skip-tls-verify: false');
    const denied = kc.replace(/server: https?:\/\/[^\n]+/, 'server: https://169.254.169.254:443');
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ name: 'edge-a', kubeconfig: kc }, 'CONFLICT', /registered already \(API/],
      [{ name: 'local', kubeconfig: kc }, 'CONFLICT', /local/],
      [{ name: 'Bad_Name', kubeconfig: kc }, 'BAD_USER_INPUT', /input.name/],
      [{ name: 'edge-b', kubeconfig: `token: ${PLANTED}\n  : : [` }, 'BAD_USER_INPUT', /not valid YAML \(line/],
      [{ name: 'edge-b', kubeconfig: exec }, 'BAD_USER_INPUT', /exec credential plugin/],
      [{ name: 'edge-b', kubeconfig: merge }, 'BAD_USER_INPUT', /anchor|alias/],
      [{ name: 'edge-b', kubeconfig: http }, 'BAD_USER_INPUT', /plain http/],
      [{ name: 'edge-b', kubeconfig: denied }, 'BAD_USER_INPUT', /ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS/],
      [{ name: 'edge-b', kubeconfig: kc, labels: [{ key: 'rollplane.io/capi-namespace', value: 'x' }] }, 'BAD_USER_INPUT', /rollplane's own/],
      [{ name: 'edge-b', kubeconfig: kc, labels: [{ key: 'env', value: 'not valid!' }] }, 'BAD_USER_INPUT', /label "env"/],
      // Refused as the bad key it is, not dropped by a prototype setter (attack 14, F7).
      [{ name: 'edge-b', kubeconfig: kc, labels: [{ key: '__proto__', value: 'bad value!' }] }, 'BAD_USER_INPUT', /label key "__proto__"/],
    ];
    for (const [input, code, message] of cases) {
      const res = await call(REGISTER, { input });
      expect(res.errors?.[0]?.extensions?.code, `${message}`).toBe(code);
      expect(res.errors![0]!.message).toMatch(message);
    }
    // GraphQL's own refusal of a variable quotes the value it refused: the kubeconfig must not reach the audit log.
    const noName = await call(REGISTER, { input: { kubeconfig: kc, labels: [] } });
    expect(noName.errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
    const wrongType = await call(REGISTER, { input: { name: 'edge-b', kubeconfig: { token: PLANTED } } });
    expect(wrongType.errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
    // Those answers go back to the caller who sent them; what else is scanned for the token is the log and the audit.
    responses.splice(-2, 2);
    // verify: a member that does not answer is refused, and nothing is registered.
    await fleet.set('edge-b', 'unreachable');
    const unverified = await call(REGISTER, { input: { name: 'edge-b', kubeconfig: kc, verify: true } });
    expect(unverified.errors![0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', reason: 'VERIFY_FAILED', health: 'UNREACHABLE' } });
    expect(await registry()).toEqual(before.registry);
    expect(readFileSync(file(), 'utf8')).toBe(before.file);
    // Without verify it is registered as it is, and shows why it is not ready.
    const unready = await call(REGISTER, { input: { name: 'edge-b', kubeconfig: kc } });
    expect(unready.errors).toBeUndefined();
    await until('edge-b UNREACHABLE', () => app.domain.clusters!.find('edge-b').then((c) => c?.health.state === 'UNREACHABLE'));
    await fleet.set('edge-b', 'ready');
    await until('edge-b READY', () => app.domain.clusters!.find('edge-b').then((c) => c?.health.state === 'READY'));
  });

  it('relabels (set and remove) an API cluster and local; refuses what another source owns, naming it', async () => {
    const res = await call(
      'mutation { updateClusterLabels(name: "edge-a", labels: [{ key: "tier", value: "edge" }], remove: ["region"]) { labels { key value } } }',
    );
    expect(res.data.updateClusterLabels.labels).toEqual([
      { key: 'env', value: 'prod' },
      { key: 'tier', value: 'edge' },
    ]);
    const written = parse(readFileSync(file(), 'utf8')) as { clusters: { name: string; labels: Record<string, string> }[] };
    expect(written.clusters.find((c) => c.name === 'edge-a')!.labels).toEqual({ env: 'prod', tier: 'edge' });
    const local = await call('mutation { updateClusterLabels(name: "local", labels: [{ key: "env", value: "mgmt" }]) { labels { key value } } }');
    expect(local.data.updateClusterLabels.labels).toEqual([{ key: 'env', value: 'mgmt' }]);

    // A person's entry in the same file (source FILE) is theirs to change.
    const text = readFileSync(file(), 'utf8').replace(
      /^clusters:\n/m,
      `clusters:\n  - name: by-hand\n    kubeconfig: |\n${kubeconfigOf('edge-h').replace(/^/gm, '      ')}\n`,
    );
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file(), text, { mode: 0o600 });
    const pass = await app.memberClusters.sync.syncFresh();
    expect(pass).toEqual({ refused: [], unreadable: [] });
    expect(await registry()).toContain('by-hand:FILE:{}');
    const before = { registry: await registry(), file: readFileSync(file(), 'utf8') };
    for (const mutation of [
      'mutation { updateClusterLabels(name: "by-hand", labels: [{ key: "a", value: "b" }]) { name } }',
      'mutation { deregisterCluster(name: "by-hand") { name } }',
    ]) {
      const refused = await call(mutation);
      expect(refused.errors![0]).toMatchObject({ extensions: { code: 'CONFLICT', source: 'FILE' } });
      expect(refused.errors![0]!.message).toMatch(/registered by FILE \(.*member-clusters\.yaml#clusters\[0\]\)/);
    }
    expect(await registry()).toEqual(before.registry);
    expect(readFileSync(file(), 'utf8')).toBe(before.file);
    // Keys to remove are label keys too (attack 14, F7 and F9): refused, and nothing changes.
    const labelsBefore = await registry();
    for (const mutation of [
      'mutation { updateClusterLabels(name: "edge-a", labels: [], remove: ["bad key!"]) { name } }',
      'mutation { updateClusterLabels(name: "edge-a", labels: [{ key: "__proto__", value: "x" }]) { name } }',
    ]) {
      const refused = await call(mutation);
      expect(refused.errors![0]!.extensions!.code, mutation).toBe('BAD_USER_INPUT');
    }
    expect(await registry()).toEqual(labelsBefore);
    expect((await call('mutation { deregisterCluster(name: "local") { name } }')).errors![0]!.extensions!.code).toBe('CONFLICT');
    expect((await call('mutation { deregisterCluster(name: "nope") { name } }')).errors![0]!.extensions!.code).toBe('NOT_FOUND');
  });

  it('refuses non-admins, however the operation is written, over HTTP and WebSocket, and changes nothing', async () => {
    const before = { registry: await registry(), file: readFileSync(file(), 'utf8') };
    const input = { name: 'edge-c', kubeconfig: kubeconfigOf('edge-b') };
    const shapes = [
      [REGISTER, { input }],
      ['mutation($input: RegisterClusterInput!) { ok: __typename x: registerCluster(input: $input) { name } }', { input }],
      ['mutation($input: RegisterClusterInput!) { ...F } fragment F on Mutation { r: registerCluster(input: $input) { name } }', { input }],
      ['mutation($input: RegisterClusterInput!) { ... on Mutation { registerCluster(input: $input) { name } } }', { input }],
      ['mutation { deregisterCluster(name: "edge-a") { name } }', {}],
      ['mutation { a: updateClusterLabels(name: "edge-a", labels: [{ key: "x", value: "y" }]) { name } }', {}],
    ] as const;
    for (const [query, variables] of shapes) {
      const res = await call(query, variables, viewer);
      expect(res.errors?.[0]?.extensions?.code, query).toBe('FORBIDDEN');
    }
    const ws = wsClient(url, { connectionParams: { authorization: `Bearer ${viewer}` } });
    try {
      const result = await new Promise<{ errors?: { extensions?: { code?: string } }[] }>((resolve, reject) => {
        let last: unknown;
        ws.subscribe(
          { query: shapes[2]![0], variables: { input } },
          { next: (value) => (last = value), error: reject, complete: () => resolve(last as never) },
        );
      }).catch((errors: { extensions?: { code?: string } }[]) => ({ errors }));
      responses.push(JSON.stringify(result));
      expect(result.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    } finally {
      await ws.dispose();
    }
    // A viewer (deployer) may read them.
    expect((await call('{ clusters { name } }', {}, viewer)).data.clusters.length).toBeGreaterThan(1);
    expect(await registry()).toEqual(before.registry);
    expect(readFileSync(file(), 'utf8')).toBe(before.file);
  });

  it('deregisters an API cluster: gone from the registry, the connections and the file', async () => {
    const res = await call('mutation { deregisterCluster(name: "edge-b") { name source } }');
    expect(res.data.deregisterCluster).toEqual({ name: 'edge-b', source: 'API' });
    expect(await registry()).not.toContain(expect.stringMatching(/^edge-b:/));
    expect(app.memberClusters.connections.get('edge-b')).toBeUndefined();
    expect((parse(readFileSync(file(), 'utf8')) as { clusters: { name: string }[] }).clusters.map((c) => c.name)).toEqual(['by-hand', 'edge-a']);
  });

  it('writes the one cluster a mutation addressed into its audit entry, and nothing for none or several', async () => {
    const mark = Number((await call('{ auditEntries(first: 1) { edges { node { id } } } }')).data.auditEntries.edges[0].node.id);
    await call('mutation { deregisterCluster(name: "edge-a") { name } }', {}, viewer);
    await call('mutation { a: updateClusterLabels(name: "edge-a", labels: []) { name } b: updateClusterLabels(name: "local", labels: []) { name } }');
    await call('mutation { deregisterCluster(name: "Not A Name") { name } }');
    await call('mutation { createApiToken(input: { name: "audit-cluster-probe", role: viewer }) { secret } }');
    await call('mutation($i: BumpAgentImageInput!) { bumpAgentImage(input: $i) { rollout { id } } }', {
      i: { image: 'rancher/harvester-vm-dhcp-agent:v9.9.9', dryRun: true },
    });
    const res = await call('{ auditEntries(first: 100) { edges { node { id operation result cluster input } } } }');
    const entries: { id: string; operation: string; result: string; cluster: string | null; input: unknown }[] = res.data.auditEntries.edges.map(
      (e: { node: unknown }) => e.node,
    );
    const cluster = (operation: string, result = 'OK') => entries.filter((e) => e.operation === operation && e.result === result).map((e) => e.cluster);
    // The mutations of the tests before: each entry names the cluster its operation addressed.
    expect(cluster('registerCluster')).toEqual(['edge-b', 'edge-a']);
    expect(cluster('updateClusterLabels')).toEqual(expect.arrayContaining(['edge-a', 'local']));
    expect(cluster('updateClusterLabels', 'CONFLICT')).toEqual(['by-hand']);
    expect(cluster('deregisterCluster')).toEqual(['edge-b']);
    expect(cluster('deregisterCluster', 'NOT_FOUND')).toEqual(['nope']);
    // A refused attempt still says which cluster it was about; a name that is none, several clusters, or none at all: null.
    const since = entries.filter((e) => Number(e.id) > mark).reverse();
    expect(since.map((e) => [e.operation, e.result, e.cluster])).toEqual([
      ['deregisterCluster', 'FORBIDDEN', 'edge-a'],
      ['updateClusterLabels', 'OK', null],
      ['deregisterCluster', 'BAD_USER_INPUT', null],
      ['createApiToken', 'OK', null],
      // A bump that names no cluster bumps local's targets (whatever became of it here, with no controllers).
      ['bumpAgentImage', expect.any(String), 'local'],
    ]);
    expect(JSON.stringify(entries)).not.toContain(PLANTED);
  });

  it('takes a cluster selection on a notification subscription; a bad label selector is BAD_USER_INPUT and creates nothing', async () => {
    const create = (clusterSelector: string) =>
      call(
        `mutation($f: NotificationFilterInput) { createNotificationSubscription(input: { name: "edge", sink: { kind: WEBHOOK, url: "https://hooks.example.com/x" }, filter: $f }) {
          subscription { filter { clusters clusterSelector } } } }`,
        { f: { clusters: ['edge-a'], clusterSelector } },
      );
    const count = async () => (await call('{ notificationSubscriptions { edges { node { id } } } }')).data.notificationSubscriptions.edges.length;
    const before = await count();
    const refused = await create('tier in ()');
    expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'input.filter.clusterSelector' } });
    expect(refused.errors?.[0]?.message).toMatch(/not a label selector/);
    expect(await count()).toBe(before);
  });

  it('keeps the kubeconfig out of the audit log however the document carries it (attack 14, F1)', async () => {
    const kc = JSON.stringify(kubeconfigOf('edge-b'));
    const before = await registry();
    const shapes: [string, Record<string, unknown>?][] = [
      // A named fragment carries its own arguments; the chosen operation holds none.
      [`mutation { ...F } fragment F on Mutation { registerCluster(input: { name: "Not A Name", kubeconfig: ${kc} }) { name } }`],
      // A variable's default value, bound to the kubeconfig.
      [`mutation($k: String! = ${kc}) { registerCluster(input: { name: "Not A Name", kubeconfig: $k }) { name } }`],
      // A variable the document never declares.
      [REGISTER, { input: { name: 'Not A Name', kubeconfig: 'apiVersion: v1' }, unused: kc }],
      // Values GraphQL refuses: an unknown field, a wrong type, a list.
      [REGISTER, { input: { name: 'edge-c', kubeconfig: 'apiVersion: v1', other: kc } }],
      [REGISTER, { input: { name: 'edge-c', kubeconfig: { nested: kc } } }],
      [REGISTER, { input: { name: 'edge-c', kubeconfig: [kc] } }],
    ];
    for (const token of [ADMIN, viewer]) {
      for (const [query, variables] of shapes) {
        const res = await call(query, variables, token);
        expect(res.errors?.[0]?.extensions?.code, query).toMatch(/^(BAD_USER_INPUT|FORBIDDEN)$/);
        // GraphQL's refusal of a variable quotes it back to the caller who sent it; what is scanned is what is kept.
        responses.pop();
      }
    }
    expect(await registry()).toEqual(before);
    const prisma = await openTestPrisma(path.join(dir, 'rollplane.db'));
    try {
      const entries = await prisma.auditEntry.findMany({ orderBy: { id: 'desc' }, take: shapes.length * 2 });
      expect(entries).toHaveLength(shapes.length * 2);
      expect(JSON.stringify(entries)).not.toContain(PLANTED);
      // What the entries keep instead: the redaction marker, and which variable GraphQL refused.
      expect(JSON.stringify(entries)).toContain('[redacted]');
      expect(entries.map((e) => e.message).join('\n')).toContain('got an invalid value (the value and');
    } finally {
      await prisma.$disconnect();
    }
  });

  it('never puts the planted token in a response, a log line, the audit log, the database or /metrics', async () => {
    const prisma = await openTestPrisma(path.join(dir, 'rollplane.db'));
    try {
      const audit = await prisma.auditEntry.findMany({ where: { operation: { contains: 'Cluster' } } });
      expect(audit.length).toBeGreaterThan(10);
      const registered = audit.find((e) => e.operation === 'registerCluster' && e.result === 'OK')!;
      // The entry names the cluster and its labels, and the kubeconfig is redacted.
      expect(registered.input).toContain('edge-a');
      expect(registered.input).toContain('prod');
      expect(registered.input).toContain('[redacted]');
      const metrics = await (await fetch(`${url.replace(/\/graphql$/, '')}/metrics`, { headers: bearer(ADMIN) })).text();
      expect(metrics).toContain('rollplane_cluster_up{cluster="edge-a"} 1');
      const everything = [
        ...responses,
        ...logs,
        JSON.stringify(audit),
        metrics,
        JSON.stringify(await prisma.$queryRawUnsafe('SELECT * FROM "MemberCluster"')),
      ].join('\n');
      expect(logs.length).toBeGreaterThan(10);
      expect(everything).not.toContain(PLANTED);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('keeps what the API registered across a restart: the source reads it back from the file', async () => {
    await app.stop();
    app = await startApp(config, { logger: pino({ level: 'silent' }) });
    url = app.url;
    await app.memberClusters.sync.syncFresh();
    expect(await registry()).toEqual(['by-hand:FILE:{}', 'edge-a:API:{"env":"prod","tier":"edge"}', 'local:LOCAL:{"env":"mgmt"}']);
    await until('edge-a READY again', () => app.domain.clusters!.find('edge-a').then((c) => c?.health.state === 'READY'));
  });
});
