import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { buildSchema, isInputObjectType, isNonNullType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTypeDefs } from '../../src/graphql/schema.js';
import { AGENT_IMAGE, NODE_AGENT_DAEMONSET, NODE_AGENT_NAMESPACE } from '../../src/sim/fleet.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

/**
 * Issue 16, items 1 and 3: every mutation that starts a rollout validates its input at the API edge through its kind's
 * contract (src/domain/kinds): the same code (BAD_USER_INPUT), the field named, the same words, and nothing written.
 */
const MUTATIONS = {
  bumpAgentImage:
    'mutation($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { created dryRun rollout { id strategy { maxUnavailable canary progressDeadlineSeconds failureThreshold autoRollback } } } }',
  bumpNodeAgentImage:
    'mutation($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { created dryRun rollout { id strategy { maxUnavailable maxConcurrent mode minReadySeconds progressDeadlineSeconds failureThreshold autoRollback } } } }',
  bumpClusterVersion:
    'mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { created dryRun rollout { id strategy { maxConcurrent progressDeadlineSeconds failureThreshold autoRollback } } } }',
  rollbackRollout: 'mutation($id: ID!, $input: RollbackInput) { rollbackRollout(id: $id, input: $input) { id } }',
} as const;
type Mutation = keyof typeof MUTATIONS;

const CV = 'cv-sample-np';
const IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.9';
const BASE: Record<Exclude<Mutation, 'rollbackRollout'>, Record<string, unknown>> = {
  bumpAgentImage: { image: IMAGE },
  bumpNodeAgentImage: { namespace: NODE_AGENT_NAMESPACE, name: NODE_AGENT_DAEMONSET, image: 'example.com/caa:v2' },
  bumpClusterVersion: { clusterVersion: CV, apiServer: { args: ['-v=7'] } },
};

/** [mutation, input (or the rollback's variables), field named, words of the message]. */
type Case = [Mutation, Record<string, unknown>, string, string];

const x = (n: number) => 'x'.repeat(n);
/** The cause and idempotency-key cases, the same for the four mutations. */
function launchCases(mutation: Mutation, base: Record<string, unknown>): Case[] {
  return [
    [mutation, { ...base, cause: { actor: x(201) } }, 'input.cause.actor', 'must be at most 200 characters (got 201)'],
    [mutation, { ...base, cause: { commit: x(201) } }, 'input.cause.commit', 'must be at most 200 characters (got 201)'],
    [mutation, { ...base, cause: { message: x(2001) } }, 'input.cause.message', 'must be at most 2000 characters (got 2001)'],
    [mutation, { ...base, cause: { runUrl: `https://ci.example/${x(2000)}` } }, 'input.cause.runUrl', 'must be at most 2000 characters'],
    [mutation, { ...base, cause: { runUrl: 'javascript:alert(1)' } }, 'input.cause.runUrl', 'must be an http(s) URL (got a javascript: URL)'],
    [mutation, { ...base, cause: { runUrl: 'ci.example/run/1' } }, 'input.cause.runUrl', 'must be an absolute http(s) URL'],
    [mutation, { ...base, idempotencyKey: '' }, 'input.idempotencyKey', 'must be 1 to 255 characters'],
    [mutation, { ...base, idempotencyKey: x(256) }, 'input.idempotencyKey', 'must be at most 255 characters (got 256)'],
  ];
}

const between = (min: number, max: number, got: number) => `must be an integer between ${min} and ${max} (got ${got})`;
const agent = (patch: Record<string, unknown>) => ({ ...BASE.bumpAgentImage, ...patch });
const node = (patch: Record<string, unknown>) => ({ ...BASE.bumpNodeAgentImage, ...patch });
const cluster = (patch: Record<string, unknown>) => ({ ...BASE.bumpClusterVersion, ...patch });

const BAD: Case[] = [
  ['bumpAgentImage', agent({ image: 'UPPER/case:1' }), 'input.image', 'is not a valid image reference'],
  ['bumpAgentImage', agent({ image: '' }), 'input.image', 'is not a valid image reference: it is empty'],
  ['bumpAgentImage', agent({ image: 'a/b:v1@sha256:nothex' }), 'input.image', 'the digest must be sha256:'],
  ['bumpAgentImage', agent({ pools: { namespaces: ['Bad_NS'] } }), 'input.pools.namespaces[0]', '"Bad_NS" is not a valid namespace name'],
  ['bumpAgentImage', agent({ pools: { names: ['default', 'a/b/c'] } }), 'input.pools.names[1]', '"a/b/c" must be "namespace/name" or "name"'],
  ['bumpAgentImage', agent({ pools: { labelSelector: 'tier in (a' } }), 'input.pools.labelSelector', 'is not a label selector'],
  [
    'bumpAgentImage',
    agent({ strategy: { maxUnavailable: '0' } }),
    'input.strategy.maxUnavailable',
    'must be a positive count such as "2" or a percentage such as "25%" (got "0")',
  ],
  ['bumpAgentImage', agent({ strategy: { maxUnavailable: '101%' } }), 'input.strategy.maxUnavailable', 'a percentage must be between 1% and 100% (got 101%)'],
  ['bumpAgentImage', agent({ strategy: { maxUnavailable: 'half' } }), 'input.strategy.maxUnavailable', 'must be a positive count'],
  ['bumpAgentImage', agent({ strategy: { canary: 0 } }), 'input.strategy.canary', between(1, 1_000_000, 0)],
  ['bumpAgentImage', agent({ strategy: { progressDeadlineSeconds: 0 } }), 'input.strategy.progressDeadlineSeconds', between(1, 86_400, 0)],
  ['bumpAgentImage', agent({ strategy: { progressDeadlineSeconds: 86_401 } }), 'input.strategy.progressDeadlineSeconds', between(1, 86_400, 86_401)],
  ['bumpAgentImage', agent({ strategy: { failureThreshold: 0 } }), 'input.strategy.failureThreshold', between(1, 1_000_000, 0)],
  ['bumpAgentImage', agent({ strategy: { failureThreshold: 1_000_001 } }), 'input.strategy.failureThreshold', between(1, 1_000_000, 1_000_001)],
  ...launchCases('bumpAgentImage', BASE.bumpAgentImage),

  ['bumpNodeAgentImage', node({ namespace: 'Bad_NS' }), 'input.namespace', 'must be a Kubernetes namespace name'],
  ['bumpNodeAgentImage', node({ name: 'Bad_Name' }), 'input.name', 'must be a Kubernetes object name'],
  ['bumpNodeAgentImage', node({ image: 'UPPER/case:1' }), 'input.image', 'is not a valid image reference'],
  ['bumpNodeAgentImage', node({ nodeDeadlineSeconds: 0 }), 'input.nodeDeadlineSeconds', between(1, 86_400, 0)],
  ['bumpNodeAgentImage', node({ nodeDeadlineSeconds: 86_401 }), 'input.nodeDeadlineSeconds', between(1, 86_400, 86_401)],
  ['bumpNodeAgentImage', node({ minReadySeconds: -1 }), 'input.minReadySeconds', between(0, 3_600, -1)],
  ['bumpNodeAgentImage', node({ minReadySeconds: 3_601 }), 'input.minReadySeconds', between(0, 3_600, 3_601)],
  ['bumpNodeAgentImage', node({ failureThreshold: 0 }), 'input.failureThreshold', between(1, 10_000, 0)],
  ['bumpNodeAgentImage', node({ failureThreshold: 10_001 }), 'input.failureThreshold', between(1, 10_000, 10_001)],
  ['bumpNodeAgentImage', node({ canaryNodeSelector: 'zone in (a' }), 'input.canaryNodeSelector', 'is not a label selector'],
  ['bumpNodeAgentImage', node({ peerRuntimeClass: 'Bad_Class' }), 'input.peerRuntimeClass', 'must be a RuntimeClass name'],
  ...launchCases('bumpNodeAgentImage', BASE.bumpNodeAgentImage),

  ['bumpClusterVersion', cluster({ clusterVersion: '' }), 'input.clusterVersion', 'is required'],
  ['bumpClusterVersion', cluster({ maxConcurrent: 0 }), 'input.maxConcurrent', between(1, 1000, 0)],
  ['bumpClusterVersion', cluster({ maxConcurrent: 1001 }), 'input.maxConcurrent', between(1, 1000, 1001)],
  ['bumpClusterVersion', cluster({ failureThreshold: 0 }), 'input.failureThreshold', between(1, 10_000, 0)],
  ['bumpClusterVersion', cluster({ progressDeadlineSeconds: 604_801 }), 'input.progressDeadlineSeconds', between(1, 604_800, 604_801)],
  ['bumpClusterVersion', { clusterVersion: CV }, 'input', 'nothing to change: give apiServer, controllerManager or specPatch'],
  ['bumpClusterVersion', cluster({ specPatch: 'apiServer' }), 'input.specPatch', 'must be a JSON object (a merge patch of the ClusterVersion spec)'],
  ['bumpClusterVersion', cluster({ specPatch: { etcd: {} } }), 'input.specPatch.etcd', 'etcd changes are refused'],
  ['bumpClusterVersion', cluster({ specPatch: { scheduler: {} } }), 'input.specPatch.scheduler', 'unknown component'],
  ['bumpClusterVersion', cluster({ apiServer: {} }), 'input.apiServer', 'give at least one of image, args or env'],
  ['bumpClusterVersion', cluster({ apiServer: { image: 'UPPER/case:1' } }), 'input.apiServer.image', 'is not a valid image reference'],
  [
    'bumpClusterVersion',
    cluster({
      controllerManager: {
        env: [
          { name: 'OK', value: '1' },
          { name: '1BAD', value: '2' },
        ],
      },
    }),
    'input.controllerManager.env[1].name',
    '"1BAD" is not a valid environment variable name',
  ],
  ['bumpClusterVersion', cluster({ clusters: [] }), 'input.clusters', 'give at least one cluster, or omit it for every cluster using the version'],
  ['bumpClusterVersion', cluster({ clusters: ['no-namespace'] }), 'input.clusters[0]', '"no-namespace" is not namespace/name'],
  ...launchCases('bumpClusterVersion', BASE.bumpClusterVersion),

  ...launchCases('rollbackRollout', {}),
];

/** An input object as GraphQL literal fields (`image: "…", apiServer: {args: ["-v=7"]}`). */
function literalFields(input: Record<string, unknown>): string {
  const literal = (v: unknown): string =>
    Array.isArray(v) ? `[${v.map(literal).join(', ')}]` : v && typeof v === 'object' ? `{ ${literalFields(v as Record<string, unknown>)} }` : JSON.stringify(v);
  return Object.entries(input)
    .map(([k, v]) => `${k}: ${literal(v)}`)
    .join(', ');
}

async function send(app: TestApp, mutation: Mutation, input: Record<string, unknown>, rolloutId = 'ro_missing') {
  return mutation === 'rollbackRollout' ? gql(app.url, MUTATIONS.rollbackRollout, { id: rolloutId, input }) : gql(app.url, MUTATIONS[mutation], { input });
}

describe('mutation inputs refused at the API edge', () => {
  let app: TestApp;
  let seeded: string;
  beforeAll(async () => {
    // No controllers: the contracts refuse bad input before anything asks the cluster, so none are needed to see it.
    app = await startTestApp({ env: { ROLLPLANE_MUTATIONS_PER_MINUTE: '100000', ROLLPLANE_MUTATION_BURST: '100000' } });
    const { rollout } = await app.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: AGENT_IMAGE,
      toVersion: IMAGE,
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: {},
      targets: [{ namespace: 'default', name: 'pool-1', fromVersion: AGENT_IMAGE, toVersion: IMAGE }],
    });
    seeded = rollout.id;
  });
  afterAll(async () => {
    await app?.close();
  });

  const counts = async () => ({
    rollouts: await app.prisma.rollout.count(),
    targets: await app.prisma.rolloutTarget.count(),
    events: await app.prisma.event.count(),
    keys: await app.prisma.idempotencyKey.count(),
  });

  it.each(BAD)('%s %j: BAD_USER_INPUT naming %s, nothing written', async (mutation, input, field, words) => {
    const before = await counts();
    const res = await send(app, mutation, input, seeded);
    expect(res.status).toBe(200);
    expect(res.data?.[mutation] ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(res.errors?.[0]?.message.startsWith(`${field}: `)).toBe(true);
    expect(res.errors?.[0]?.message).toContain(words);
    expect(await counts()).toEqual(before);
    // The rollback's original was not aborted either.
    expect((await app.domain.rollouts.get(seeded))?.state).toBe('PENDING');
  });

  // Attack finding (issue 15): an explicit null for a field with a default was taken as the default, so
  // `dryRun: null` made a real rollout. Every such field is non-null with its default: null is refused by GraphQL.
  const NULLABLE_DEFAULTS: [Exclude<Mutation, 'rollbackRollout'>, string[]][] = [
    ['bumpAgentImage', ['dryRun']],
    ['bumpAgentImage', ['allowDowngrade']],
    ['bumpAgentImage', ['supersede']],
    ['bumpAgentImage', ['strategy', 'maxUnavailable']],
    ['bumpAgentImage', ['strategy', 'progressDeadlineSeconds']],
    ['bumpAgentImage', ['strategy', 'failureThreshold']],
    ['bumpAgentImage', ['strategy', 'autoRollback']],
    ['bumpNodeAgentImage', ['dryRun']],
    // mode and nodeDeadlineSeconds have no schema default (issue 27): the planner reads them off the DaemonSet.
    ['bumpNodeAgentImage', ['minReadySeconds']],
    ['bumpNodeAgentImage', ['failureThreshold']],
    ['bumpNodeAgentImage', ['peerRuntimeClass']],
    ['bumpClusterVersion', ['dryRun']],
    ['bumpClusterVersion', ['maxConcurrent']],
    ['bumpClusterVersion', ['failureThreshold']],
    ['bumpClusterVersion', ['progressDeadlineSeconds']],
  ];

  it('lists every input field with a default, and each is non-null', () => {
    const schema = buildSchema(loadTypeDefs());
    const defaulted: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isInputObjectType(type) || type.name.startsWith('__')) continue;
      for (const field of Object.values(type.getFields())) {
        if (field.defaultValue === undefined) continue;
        defaulted.push(`${type.name}.${field.name}`);
        expect(isNonNullType(field.type), `${type.name}.${field.name} has a default, so null must not stand for it`).toBe(true);
      }
    }
    const inputOf = { bumpAgentImage: 'BumpAgentImageInput', bumpNodeAgentImage: 'BumpNodeAgentImageInput', bumpClusterVersion: 'BumpClusterVersionInput' };
    const listed = NULLABLE_DEFAULTS.map(([mutation, path]) =>
      path.length === 1 ? `${inputOf[mutation]}.${path[0]}` : `AgentRolloutStrategyInput.${path[1]}`,
    );
    expect(listed.sort()).toEqual(defaulted.sort());
  });

  it.each(NULLABLE_DEFAULTS)('%s: an explicit null for input.%s is refused, nothing written', async (mutation, path) => {
    const before = await counts();
    const input: Record<string, unknown> = { ...BASE[mutation] };
    if (path.length === 1) input[path[0]!] = null;
    else input[path[0]!] = { [path[1]!]: null };
    const res = await send(app, mutation, input);
    expect(res.data?.[mutation] ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toMatch(new RegExp(`at "input\\.${path.join('\\.')}"; Expected non-nullable type ".+!" not to be null`));
    // Written in the document instead of a variable: GraphQL validation refuses it.
    const literal = path.length === 1 ? `${path[0]}: null` : `${path[0]}: { ${path[1]}: null }`;
    const inline = await gql(app.url, `mutation { ${mutation}(input: { ${literal}, ${literalFields(BASE[mutation])} }) { created } }`);
    expect(inline.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(inline.errors?.[0]?.message).toMatch(/^Expected value of type ".+!", found null\.$/);
    expect(await counts()).toEqual(before);
  });

  it('refuses a rollback with an empty id before reading anything', async () => {
    const res = await gql(app.url, MUTATIONS.rollbackRollout, { id: '', input: {} });
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
  });
});

describe('mutation inputs accepted at the API edge', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: {
        ROLLPLANE_SIM_FLEET: 'demo',
        ROLLPLANE_CONTROLLERS: 'on',
        ROLLPLANE_LEADER_ELECT: 'false',
        ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
        ROLLPLANE_MUTATION_BURST: '100000',
      },
    });
    // The caches the planners read have the demo fleet.
    await until(
      'the demo fleet in the caches',
      async () => {
        const res = await gql(
          app.url,
          `{ agentPools { totalCount } nodeAgentSet(namespace: "${NODE_AGENT_NAMESPACE}", name: "${NODE_AGENT_DAEMONSET}") { name } clusterVersion(name: "${CV}") { name } }`,
        );
        return res.data?.agentPools?.totalCount === 3 && res.data.nodeAgentSet !== null && res.data.clusterVersion !== null;
      },
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    await app?.close();
  });

  const atLimits = { actor: x(200), commit: x(200), message: x(2000), runUrl: `https://ci.example/${x(1981)}` };

  it('plans every bump at the edges of its ranges, with the contract defaults for what was not given', async () => {
    const before = await app.prisma.rollout.count();
    const cases: [Mutation, Record<string, unknown>, Record<string, unknown>][] = [
      [
        'bumpAgentImage',
        agent({ dryRun: true }),
        // autoRollback: on by default for agent pools (issue 27).
        { maxUnavailable: '1', canary: null, progressDeadlineSeconds: 600, failureThreshold: 1, autoRollback: true },
      ],
      [
        'bumpAgentImage',
        agent({
          dryRun: true,
          image: ` ${IMAGE}\n`,
          cause: atLimits,
          idempotencyKey: x(255),
          strategy: { maxUnavailable: ' 100% ', canary: 1_000_000, progressDeadlineSeconds: 86_400, failureThreshold: 1_000_000, autoRollback: true },
        }),
        { maxUnavailable: '100%', canary: 1_000_000, progressDeadlineSeconds: 86_400, failureThreshold: 1_000_000, autoRollback: true },
      ],
      [
        'bumpAgentImage',
        agent({ dryRun: true, strategy: { maxUnavailable: '1%', canary: 1, progressDeadlineSeconds: 1, failureThreshold: 1 } }),
        { maxUnavailable: '1%', canary: 1, progressDeadlineSeconds: 1 },
      ],
      [
        'bumpNodeAgentImage',
        node({ dryRun: true }),
        {
          maxUnavailable: '1',
          maxConcurrent: 1,
          // The demo's chart-shaped CAA set: its own surge way, and its startupProbe budget plus the pull (issue 27).
          mode: 'SURGE',
          minReadySeconds: 0,
          progressDeadlineSeconds: 740,
          failureThreshold: 1,
          autoRollback: false,
        },
      ],
      [
        'bumpNodeAgentImage',
        node({
          dryRun: true,
          cause: atLimits,
          nodeDeadlineSeconds: 86_400,
          minReadySeconds: 3_600,
          failureThreshold: 10_000,
          canaryNodeSelector: 'kubernetes.io/os=linux',
        }),
        { minReadySeconds: 3_600, progressDeadlineSeconds: 86_400, failureThreshold: 10_000 },
      ],
      ['bumpClusterVersion', cluster({ dryRun: true }), { maxConcurrent: 1, progressDeadlineSeconds: 600, failureThreshold: 1, autoRollback: false }],
      [
        'bumpClusterVersion',
        cluster({
          dryRun: true,
          cause: atLimits,
          maxConcurrent: 1000,
          failureThreshold: 10_000,
          progressDeadlineSeconds: 604_800,
          specPatch: { apiServer: { service: { metadata: { labels: { a: 'b' } } } } },
        }),
        { maxConcurrent: 1000, progressDeadlineSeconds: 604_800, failureThreshold: 10_000 },
      ],
    ];
    for (const [mutation, input, strategy] of cases) {
      const res = await send(app, mutation, input);
      expect(res.errors, `${mutation} ${JSON.stringify(input).slice(0, 200)}`).toBeUndefined();
      expect(res.data[mutation]).toMatchObject({ dryRun: true, created: false, rollout: { id: 'dry-run', strategy } });
    }
    expect(await app.prisma.rollout.count()).toBe(before);
  });

  it('takes a rollback cause at the limits (the answer is about the id, not the input)', async () => {
    const res = await gql(app.url, MUTATIONS.rollbackRollout, { id: 'ro_missing', input: { cause: atLimits, idempotencyKey: x(255) } });
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});
