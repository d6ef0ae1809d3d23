import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

/**
 * Decisions at a staged rollout's approval gate over HTTP with authentication on (issue 30, docs/waves.md): who decides
 * is the token (its id and role); the same token approving twice counts once; the run's starter and a viewer are
 * FORBIDDEN, and the refusal is audited; once the run is aborted a decision is CONFLICT. Every decision is kept.
 * Likewise at a gate between the targets of a rollout without waves that excludes its starter (Rollout.startedBy).
 */
const ADMIN = 'admin-secret-for-gate-decisions-0123456789';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const APPROVE =
  'mutation ($id: ID!, $c: String) { approveGate(rolloutId: $id, gate: "before:one", comment: $c) { state reason decisions { by role decision comment } } }';

let app: TestApp;
const secrets: Record<string, string> = {};

beforeAll(async () => {
  app = await startTestApp({
    env: {
      ROLLPLANE_AUTH: 'on',
      ROLLPLANE_ADMIN_TOKEN: ADMIN,
      ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1',
      ROLLPLANE_CONTROLLERS: 'on',
      ROLLPLANE_LEADER_ELECT: 'false',
    },
  });
  for (const [name, role] of [
    ['alice', 'deployer'],
    ['bob', 'deployer'],
    ['watcher', 'viewer'],
  ] as const) {
    const created = await gql(app.url, `mutation { createApiToken(input: { name: "${name}", role: ${role} }) { secret } }`, {}, bearer(ADMIN));
    secrets[name] = created.data.createApiToken.secret;
  }
});
afterAll(async () => {
  await app?.close();
});

describe('approval gate decisions', () => {
  it('counts a token once, refuses the starter and a viewer (audited), and takes no decision after an abort', async () => {
    const bump = await gql(
      app.url,
      `mutation { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.7", strategy: { autoRollback: false },
         waveStrategy: { waves: [{ name: "one", clusters: { names: ["local"] }, before: { type: APPROVAL, config: { required: 2 } } }] } }) { rollout { id } } }`,
      {},
      bearer(ADMIN),
    );
    expect(bump.errors).toBeUndefined();
    const id: string = bump.data.bumpAgentImage.rollout.id;
    await until('the gate opened', async () => {
      const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { gates { state } } }', { id }, bearer(ADMIN))).data.rollout;
      return r.gates.length === 1;
    });

    const starter = await gql(app.url, APPROVE, { id, c: 'mine' }, bearer(ADMIN));
    expect(starter.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(starter.errors?.[0]?.message).toMatch(/started the run and may not decide/);
    const viewer = await gql(app.url, APPROVE, { id, c: 'lgtm' }, bearer(secrets.watcher!));
    expect(viewer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // Retrying a gate is a deployer's too: a viewer is FORBIDDEN (before anything is looked up); an approval gate is
    // not one that can be retried (CONFLICT).
    const RETRY = 'mutation ($id: ID!) { retryGate(rolloutId: $id, gate: "before:one") { state } }';
    expect((await gql(app.url, RETRY, { id }, bearer(secrets.watcher!))).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const notAnalysis = await gql(app.url, RETRY, { id }, bearer(secrets.alice!));
    expect(notAnalysis.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(notAnalysis.errors?.[0]?.message).toMatch(/gate before:one is of type APPROVAL: only an ANALYSIS gate can be retried/);

    const once = await gql(app.url, APPROVE, { id, c: 'canary fine' }, bearer(secrets.alice!));
    expect(once.errors).toBeUndefined();
    const twice = await gql(app.url, APPROVE, { id, c: 'again' }, bearer(secrets.alice!));
    expect(twice.data.approveGate.state).toBe('WAITING');
    expect(twice.data.approveGate.reason).toMatch(/waiting for 1 more approval/);
    expect(twice.data.approveGate.decisions.map((d: { role: string; comment: string }) => [d.role, d.comment])).toEqual([
      ['deployer', 'canary fine'],
      ['deployer', 'again'],
    ]);

    const aborted = await gql(app.url, 'mutation ($id: ID!) { abortRollout(id: $id) { state } }', { id }, bearer(ADMIN));
    expect(aborted.data.abortRollout.state).toBe('ABORTED');
    const late = await gql(app.url, APPROVE, { id, c: 'too late' }, bearer(secrets.bob!));
    expect(late.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    const read = (
      await gql(
        app.url,
        'query ($id: ID!) { rollout(id: $id) { startedBy gates { state decisions { by byName comment } } } }',
        { id },
        bearer(secrets.watcher!),
      )
    ).data.rollout;
    const gate = read.gates[0];
    expect(gate.decisions.map((d: { comment: string }) => d.comment)).toEqual(['canary fine', 'again']);
    // Who, by the tokens' names (any reader sees them): the starter, and each decider beside its id.
    expect(read.startedBy).toBe('admin');
    expect(gate.decisions.map((d: { by: string; byName: string }) => d.byName)).toEqual(['alice', 'alice']);
    expect(gate.decisions[0].by).not.toBe('alice'); // `by` stays the token's id

    // The refusals are in the audit log, with who tried.
    const audit = await app.prisma.auditEntry.findMany({ where: { operation: { contains: 'approveGate' } }, orderBy: { id: 'asc' } });
    expect(audit.map((e) => [e.actor, e.role, e.result])).toEqual([
      [expect.any(String), 'admin', 'FORBIDDEN'],
      ['watcher', 'viewer', 'FORBIDDEN'],
      ['alice', 'deployer', 'OK'],
      ['alice', 'deployer', 'OK'],
      ['bob', 'deployer', 'CONFLICT'],
    ]);
  });

  it('refuses the starter at a gate between targets with excludeStarter, takes another token, and names the starter', async () => {
    const bump = await gql(
      app.url,
      `mutation { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.8",
         strategy: { autoRollback: false, maxUnavailable: "1", gate: { type: APPROVAL, config: { excludeStarter: true }, after: [1] } } }) {
         rollout { id startedBy strategy { gate { config } } } } }`,
      {},
      bearer(secrets.alice!),
    );
    expect(bump.errors).toBeUndefined();
    const rollout = bump.data.bumpAgentImage.rollout;
    expect(rollout.startedBy).toBe('alice');
    expect(rollout.strategy.gate.config).toMatchObject({ excludeStarter: true });
    const id: string = rollout.id;
    await until('the gate between targets opened', async () => {
      const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { gates { key state } } }', { id }, bearer(ADMIN))).data.rollout;
      return r.gates.length === 1 && r.gates[0].key === 'targets:1';
    });
    const DECIDE = 'mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "targets:1") { state decisions { byName } } }';
    const starter = await gql(app.url, DECIDE, { id }, bearer(secrets.alice!));
    expect(starter.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(starter.errors?.[0]?.message).toMatch(/started the run and may not decide/);
    const other = await gql(app.url, DECIDE, { id }, bearer(secrets.bob!));
    expect(other.errors).toBeUndefined();
    expect(other.data.approveGate).toEqual({ state: 'PASSED', decisions: [{ byName: 'bob' }] });
    await until('the rollout finished', async () => {
      const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id }, bearer(ADMIN))).data.rollout;
      return r.state === 'SUCCEEDED';
    });
    const read = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { startedBy } }', { id }, bearer(secrets.watcher!))).data.rollout;
    expect(read.startedBy).toBe('alice');
    // A rollback is started by its caller.
    const rollback = await gql(app.url, 'mutation ($id: ID!) { rollbackRollout(id: $id) { id startedBy } }', { id }, bearer(secrets.bob!));
    expect(rollback.errors).toBeUndefined();
    expect(rollback.data.rollbackRollout.startedBy).toBe('bob');
    const back: string = rollback.data.rollbackRollout.id;
    await until('the rollback finished', async () => {
      const r = (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id: back }, bearer(ADMIN))).data.rollout;
      return r.state === 'SUCCEEDED';
    });

    // A plain bump (no waves, no gate) names its caller's token too.
    const plain = await gql(
      app.url,
      'mutation { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.9" }) { rollout { id startedBy } } }',
      {},
      bearer(secrets.alice!),
    );
    expect(plain.errors).toBeUndefined();
    expect(plain.data.bumpAgentImage.rollout.startedBy).toBe('alice');
    const listed = (await gql(app.url, '{ rollouts(first: 10) { edges { node { id startedBy } } } }', {}, bearer(secrets.watcher!))).data.rollouts.edges;
    expect(listed.find((e: { node: { id: string } }) => e.node.id === plain.data.bumpAgentImage.rollout.id)?.node.startedBy).toBe('alice');
  });
});
