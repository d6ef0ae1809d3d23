import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { collect, gql, wsClient } from '../helpers/graphql.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { untypedEvent } from '../helpers/events.js';

const ROLLOUT_FIELDS = `id kind state toVersion fromVersion message progress { total pending skipped percent }
  cause { actor commit } strategy { maxUnavailable failureThreshold progressDeadlineSeconds autoRollback }
  targets { totalCount edges { node { name namespace state skipReason ordinal } } }`;

describe('GraphQL over HTTP', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  async function seedRollout(toVersion = 'rancher/harvester-vm-dhcp-agent:v0.3.1') {
    const { rollout } = await app.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'rancher/harvester-vm-dhcp-agent:v0.3.0',
      toVersion,
      selector: {},
      strategy: { kind: 'AGENT_POOL', maxUnavailable: '1', failureThreshold: 1, progressDeadlineSeconds: 600, autoRollback: false },
      cause: { actor: 'ci-bot', commit: 'abc123' },
      targets: [
        { namespace: 'default', name: 'net-1', fromVersion: 'v0.3.0', toVersion },
        { namespace: 'default', name: 'net-2', fromVersion: 'v0.3.0', toVersion, skipReason: 'held' },
      ],
    });
    return rollout;
  }

  it("shows a rollback to each target's previous version as the text it always read, with a typed field beside it (ADR 0046)", async () => {
    const original = await seedRollout('agent:v9');
    const { rollout } = await app.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v9',
      toVersion: null,
      selector: { rollbackOf: original.id },
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'ci-bot' },
      rollbackOfId: original.id,
      targets: [{ namespace: 'default', name: 'net-1', fromVersion: 'agent:v9', toVersion: 'v0.3.0' }],
    });
    const read = await gql(app.url, 'query($id: ID!) { rollout(id: $id) { toVersion toEachPreviousRevision targets { edges { node { toVersion } } } } }', {
      id: rollout.id,
    });
    expect(read.errors).toBeUndefined();
    expect(read.data.rollout).toEqual({
      toVersion: 'previous revision of each target',
      toEachPreviousRevision: true,
      targets: { edges: [{ node: { toVersion: 'v0.3.0' } }] },
    });
    const plain = await gql(app.url, 'query($id: ID!) { rollout(id: $id) { toVersion toEachPreviousRevision } }', { id: original.id });
    expect(plain.data.rollout).toEqual({ toVersion: 'agent:v9', toEachPreviousRevision: false });
  });

  it('types a NodeAgentReplaced payload for clients (Event.nodeAgentReplacement, read through its schema)', async () => {
    const [whole, old] = await app.domain.events.append(
      {
        type: 'NodeAgentReplaced',
        kind: 'NODE_AGENT',
        name: 'typed-node',
        payload: {
          node: 'typed-node',
          daemonSet: 'ns/agent',
          oldPod: 'a-1',
          newPod: 'a-2',
          oldImage: 'agent:v1',
          newImage: 'agent:v2',
          peerPodsRestarted: 2,
          seconds: 4.5,
        },
      },
      untypedEvent({ type: 'NodeAgentReplaced', kind: 'NODE_AGENT', name: 'old-node', payload: { newImage: 7, seconds: 'slow' } }),
    );
    const read = await gql(
      app.url,
      'query($after: String) { events(after: $after, first: 3) { edges { node { type nodeAgentReplacement { node daemonSet newImage peerPodsRestarted seconds planned } } } } }',
      {
        after: String(whole!.id - 1),
      },
    );
    expect(read.errors).toBeUndefined();
    expect(read.data.events.edges.map((e: any) => e.node.nodeAgentReplacement)).toEqual([
      { node: 'typed-node', daemonSet: 'ns/agent', newImage: 'agent:v2', peerPodsRestarted: 2, seconds: 4.5, planned: null },
      // An older payload: what does not match its schema is null, the node is the event's object.
      { node: 'old-node', daemonSet: null, newImage: null, peerPodsRestarted: null, seconds: null, planned: null },
    ]);
    expect(old!.id).toBe(whole!.id + 1);
    const other = await gql(app.url, '{ events(first: 1) { edges { node { type nodeAgentReplacement { node } } } } }');
    expect(other.data.events.edges.filter((e: any) => e.node.type !== 'NodeAgentReplaced').every((e: any) => e.node.nodeAgentReplacement === null)).toBe(true);
  });

  it('gives each rollout of a page its own progress (one grouped query for the page), as rollout(id) does', async () => {
    const ids: string[] = [];
    for (const targets of [1, 3, 0]) {
      const { rollout } = await app.domain.rollouts.create({
        kind: 'AGENT_POOL',
        fromVersion: 'v1',
        toVersion: `v-page-${targets}`,
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
        cause: { actor: 'ci-bot' },
        targets: Array.from({ length: targets }, (_, i) => ({
          namespace: 'default',
          name: `page-${targets}-${i}`,
          fromVersion: 'v1',
          toVersion: `v-page-${targets}`,
          ...(i === 0 ? { skipReason: 'held' } : {}),
        })),
      });
      ids.push(rollout.id);
    }
    const page = await gql(app.url, '{ rollouts(first: 50) { edges { node { id progress { total pending skipped percent } } } } }');
    expect(page.errors).toBeUndefined();
    const listed = new Map(page.data.rollouts.edges.map((e: any) => [e.node.id, e.node.progress]));
    expect(ids.map((id) => listed.get(id))).toEqual([
      { total: 1, pending: 0, skipped: 1, percent: 100 },
      { total: 3, pending: 2, skipped: 1, percent: 33.33 },
      { total: 0, pending: 0, skipped: 0, percent: 100 },
    ]);
    for (const [id, progress] of listed) {
      const one = await gql(app.url, 'query($id: ID!) { rollout(id: $id) { progress { total pending skipped percent } } }', { id });
      expect(one.data.rollout.progress).toEqual(progress);
    }
  });

  it("answers another kind's strategy fields as null on an agent-pool rollout (each kind resolves its own, ADR 0045)", async () => {
    const seeded = await seedRollout();
    const res = await gql(app.url, 'query($id: ID!) { rollout(id: $id) { strategy { mode minReadySeconds maxConcurrent canary } } }', { id: seeded.id });
    expect(res.errors).toBeUndefined();
    expect(res.data.rollout.strategy).toEqual({ mode: null, minReadySeconds: null, maxConcurrent: null, canary: null });
  });

  it('answers a query with the stored rollout, its targets and progress', async () => {
    const seeded = await seedRollout();
    const res = await gql(app.url, `query($id: ID!) { rollout(id: $id) { ${ROLLOUT_FIELDS} } }`, { id: seeded.id });
    expect(res.status).toBe(200);
    expect(res.errors).toBeUndefined();
    expect(res.data.rollout).toMatchObject({
      id: seeded.id,
      kind: 'AGENT_POOL',
      state: 'PENDING',
      cause: { actor: 'ci-bot', commit: 'abc123' },
      strategy: { maxUnavailable: '1', failureThreshold: 1, progressDeadlineSeconds: 600, autoRollback: false },
      progress: { total: 2, pending: 1, skipped: 1, percent: 50 },
    });
    expect(res.data.rollout.targets.edges.map((e: any) => [e.node.name, e.node.state, e.node.skipReason])).toEqual([
      ['net-1', 'PENDING', null],
      ['net-2', 'SKIPPED', 'held'],
    ]);
  });

  it('pauses and resumes a rollout through mutations and records each change as an event', async () => {
    const seeded = await seedRollout();
    const paused = await gql(app.url, `mutation($id: ID!) { pauseRollout(id: $id, reason: "maintenance window") { id state message } }`, { id: seeded.id });
    expect(paused.errors).toBeUndefined();
    expect(paused.data.pauseRollout).toEqual({ id: seeded.id, state: 'PAUSED', message: 'maintenance window' });
    const resumed = await gql(app.url, `mutation($id: ID!) { resumeRollout(id: $id) { state } }`, { id: seeded.id });
    expect(resumed.data.resumeRollout.state).toBe('PROGRESSING');
    const events = await gql(app.url, `query($id: ID!) { events(filter: { rolloutId: $id }) { edges { cursor node { id type payload } } } }`, {
      id: seeded.id,
    });
    expect(events.data.events.edges.map((e: any) => [e.node.type, e.node.payload.to])).toEqual([
      ['RolloutStateChanged', 'PENDING'],
      ['RolloutStateChanged', 'PAUSED'],
      ['RolloutStateChanged', 'PROGRESSING'],
    ]);
    expect(events.data.events.edges.every((e: any) => e.cursor === e.node.id)).toBe(true);
  });

  it('aborting cancels targets that were never admitted', async () => {
    const seeded = await seedRollout();
    const res = await gql(
      app.url,
      `mutation($id: ID!) { abortRollout(id: $id, reason: "bad image") { state message finishedAt progress { cancelled skipped percent } } }`,
      { id: seeded.id },
    );
    expect(res.data.abortRollout).toMatchObject({ state: 'ABORTED', message: 'bad image', progress: { cancelled: 1, skipped: 1, percent: 100 } });
    expect(res.data.abortRollout.finishedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('answers NOT_FOUND for an unknown rollout and changes nothing', async () => {
    const before = await app.prisma.event.count();
    const res = await gql(app.url, `mutation { pauseRollout(id: "ro_missing") { id } }`);
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(res.errors?.[0]?.message).toContain('ro_missing');
    expect(await app.prisma.event.count()).toBe(before);
  });

  it('answers CONFLICT for a transition the state machine forbids and changes nothing', async () => {
    const seeded = await seedRollout();
    const before = await app.prisma.event.count();
    const res = await gql(app.url, `mutation($id: ID!) { resumeRollout(id: $id) { id } }`, { id: seeded.id });
    expect(res.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(res.errors?.[0]?.message).toMatch(/is PENDING; it cannot become PROGRESSING/);
    expect(await app.prisma.event.count()).toBe(before);
    expect((await app.domain.rollouts.require(seeded.id)).state).toBe('PENDING');
  });

  it('answers BAD_USER_INPUT naming the field for a bad page size, cursor or date', async () => {
    const tooMany = await gql(app.url, `{ rollouts(first: 5000) { totalCount } }`);
    expect(tooMany.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
    const badCursor = await gql(app.url, `{ rollouts(after: "not-a-cursor") { totalCount } }`);
    expect(badCursor.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
    const badEventCursor = await gql(app.url, `{ events(after: "-1") { edges { cursor } } }`);
    expect(badEventCursor.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
    const badDate = await gql(app.url, `query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }`, { f: { createdAfter: 'yesterday' } });
    expect(badDate.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(badDate.errors?.[0]?.message).toContain('ISO 8601');
    // The same mistake written as a literal is caught by GraphQL validation.
    const literal = await gql(app.url, `{ rollouts(filter: { createdAfter: "yesterday" }) { totalCount } }`);
    expect(literal.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('answers GraphQL validation errors with their code and a 400', async () => {
    const res = await gql(app.url, `{ rollouts { noSuchField } }`);
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('refuses malformed JSON with a 400 and a code', async () => {
    const res = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": ' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('pages rollouts newest first with cursors, without duplicates or gaps', async () => {
    for (let i = 0; i < 5; i++) await seedRollout(`registry.example:5000/agent:v1.0.${i}`);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const res: any = await gql(
        app.url,
        `query($after: String) { rollouts(first: 2, after: $after, filter: { search: "registry.example" }) { totalCount pageInfo { hasNextPage endCursor } edges { node { id toVersion } } } }`,
        { after },
      );
      expect(res.data.rollouts.totalCount).toBe(5);
      seen.push(...res.data.rollouts.edges.map((e: any) => e.node.toVersion));
      if (!res.data.rollouts.pageInfo.hasNextPage) break;
      after = res.data.rollouts.pageInfo.endCursor;
    }
    expect(seen).toEqual([4, 3, 2, 1, 0].map((i) => `registry.example:5000/agent:v1.0.${i}`));
  });

  it('filters rollouts by exact version, to or from it (issue 30), not by substring', async () => {
    const ofVersion = async (version: string) => {
      const res: any = await gql(app.url, 'query($v: String) { rollouts(first: 10, filter: { version: $v }) { totalCount edges { node { toVersion } } } }', {
        v: version,
      });
      expect(res.errors).toBeUndefined();
      return res.data.rollouts;
    };
    const FROM = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
    const fromEarlier = (await ofVersion(FROM)).totalCount;
    for (const v of ['v2.0.0', 'v2.0.0-rc1', 'v2.0.1']) await seedRollout(`registry.example:5000/agent:${v}`);
    const to = await ofVersion('registry.example:5000/agent:v2.0.0');
    expect(to.totalCount).toBe(1);
    expect(to.edges.map((e: any) => e.node.toVersion)).toEqual(['registry.example:5000/agent:v2.0.0']);
    // Every seeded rollout started from the same version.
    expect((await ofVersion(FROM)).totalCount).toBe(fromEarlier + 3);
    expect((await ofVersion('registry.example:5000/agent:v2')).totalCount).toBe(0);
    const tooLong: any = await gql(app.url, 'query($v: String) { rollouts(filter: { version: $v }) { totalCount } }', { v: 'x'.repeat(513) });
    expect(tooLong.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('marks POST answers, data or errors, as not to be stored by caches', async () => {
    for (const query of ['{ serverInfo { version } }', '{ nope }']) {
      const res = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
      expect(res.headers.get('cache-control'), query).toBe('no-store');
    }
  });

  it('serves GET queries (Apollo, with CSRF prevention) as well as POST', async () => {
    const res = await fetch(`${app.url}?query=${encodeURIComponent('{ serverInfo { version kubeMode } }')}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data.serverInfo.kubeMode).toBe('sim');
    const blocked = await fetch(`${app.url}?query=${encodeURIComponent('{ serverInfo { version } }')}`);
    expect(blocked.status).toBe(400);
  });
});

describe('query cost', () => {
  it('counts a connection page once, not once more for its edges', async () => {
    const app = await startTestApp();
    try {
      // 100 rollouts × ~20 fields: well inside the default limit of 20,000.
      const ok = await gql(
        app.url,
        `{ rollouts(first: 100) { edges { cursor node { id kind state toVersion progress { total percent } cause { actor commit } strategy { maxUnavailable } } } } }`,
      );
      expect(ok.errors).toBeUndefined();
      const tooMuch = await gql(app.url, `{ rollouts(first: 1000) { edges { node { targets(first: 1000) { edges { node { id } } } } } } }`);
      expect(tooMuch.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost' });
    } finally {
      await app.close();
    }
  });

  it('counts `first: null` as the default page size it is served as, inline or through a variable, over HTTP and WebSocket', async () => {
    // Issue 17, F5: null was counted as a page of one, so a document refused with its defaults was accepted with
    // `first: null`. 50 rollouts × (100 targets + 100 events) is about 40,000 fields, twice the default limit.
    const page = (first: string) =>
      `rollouts(first: ${first}) { edges { node { targets(first: ${first}) { edges { node { id name } } } events(first: ${first}) { edges { node { id payload } } } } } }`;
    const app = await startTestApp();
    const client = wsClient(app.url);
    try {
      const refusals: [string, string, Record<string, unknown>][] = [
        ['the defaults', `{ ${page('50').replace(/\(first: 50\)/g, '')} }`, {}],
        ['inline null', `{ ${page('null')} }`, {}],
        ['a null variable', `query($n: Int) { ${page('$n')} }`, { n: null }],
        ['a variable not sent', `query($n: Int) { ${page('$n')} }`, {}],
        ["a variable's own default", `query($n: Int = 500) { ${page('$n')} }`, {}],
      ];
      for (const [name, query, variables] of refusals) {
        const overHttp = await gql(app.url, query, variables);
        expect(overHttp.errors?.[0]?.extensions, `${name} over HTTP`).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost', value: expect.any(Number) });
        expect(overHttp.errors?.[0]?.extensions?.value as number, name).toBeGreaterThan(20_000);
        const overWs = collect(client, query, variables);
        await overWs.waitFor(1);
        // (graphql-ws hands a refused operation's errors over as one list.)
        expect(overWs.errors, `${name} over WebSocket`).toMatchObject([[{ extensions: { code: 'BAD_USER_INPUT', limit: 'cost' } }]]);
      }
      // A small page asked for through the same variable is still accepted: the estimate follows the value sent.
      const small = await gql(app.url, `query($n: Int) { ${page('$n')} }`, { n: 5 });
      expect(small.errors).toBeUndefined();
    } finally {
      await client.dispose();
      await app.close();
    }
  });
});
