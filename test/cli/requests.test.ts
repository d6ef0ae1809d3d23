import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/rollplane.js';
import type { RolloutView } from '../../src/cli/operations.js';
import { rolloutView } from './rolloutView.js';

/**
 * What the commands send, flag by flag: `main()` in-process against a real HTTP server that records each GraphQL
 * request and answers with a canned payload.
 */

// The CLI prints what it is given: an empty strategy is as good as a full one here.
const rollout = rolloutView({ fromVersion: null, strategy: {} as RolloutView['strategy'] });
const payload = { rollout, plan: [], created: true, dryRun: false };

let server: http.Server;
let url: string;
const seen: { query: string; variables: Record<string, any>; authorization?: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const request = JSON.parse(body) as { query: string; variables: Record<string, any> };
      seen.push({ ...request, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      const field = /\{\s*(\w+)\s*\(/.exec(request.query.slice(request.query.indexOf('{')))?.[1] ?? 'rollout';
      // History pages: as many rollouts as asked for; a full first page of 20 has a next page.
      const first = Number(request.variables.first ?? 0);
      const more = field === 'rollouts' && first === 20 && request.variables.after === null;
      const page = {
        totalCount: 1000,
        pageInfo: { hasNextPage: more, endCursor: more ? 'c1' : null },
        edges: Array.from({ length: first }, () => ({ node: rollout })),
      };
      const data = field.startsWith('bump') ? { [field]: payload } : field === 'rollouts' ? { rollouts: page } : { [field]: rollout };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const github = {
  GITHUB_ACTIONS: 'true',
  GITHUB_REPOSITORY: 'acme/fleet',
  GITHUB_RUN_ID: '7',
  GITHUB_JOB: 'deploy',
  GITHUB_ACTION: 'bump',
  GITHUB_SHA: 'cafe',
  GITHUB_ACTOR: 'octo',
};

async function send(args: string[], env: Record<string, string> = {}): Promise<{ code: number; request: (typeof seen)[number] }> {
  const before = seen.length;
  const code = await main(args, { env: { ROLLPLANE_URL: url, ...env }, stdout: { write: () => true }, stderr: { write: () => true } });
  expect(seen.length, 'one request').toBe(before + 1);
  return { code, request: seen[seen.length - 1]! };
}

describe('what the CLI sends', () => {
  it('bump agent-image: every flag, the token, the CI cause and key', async () => {
    const { code, request } = await send(
      [
        'bump',
        'agent-image',
        'reg.example.com/agent:v2',
        '--namespace',
        'prod',
        '--pool',
        'prod/net-1',
        '--selector',
        'tier=edge',
        '--max-unavailable',
        '25%',
        '--canary',
        '2',
        '--progress-deadline',
        '10m',
        '--failure-threshold',
        '3',
        '--auto-rollback',
        '--allow-downgrade',
        '--supersede',
        '--message',
        'hotfix',
      ],
      { ...github, ROLLPLANE_TOKEN: 'tok' },
    );
    expect(code).toBe(0);
    expect(request.authorization).toBe('Bearer tok');
    expect(request.query).toContain('bumpAgentImage(input: $input)');
    expect(request.variables.input).toEqual({
      image: 'reg.example.com/agent:v2',
      pools: { namespaces: ['prod'], names: ['prod/net-1'], labelSelector: 'tier=edge' },
      strategy: { maxUnavailable: '25%', canary: 2, progressDeadlineSeconds: 600, failureThreshold: 3, autoRollback: true },
      allowDowngrade: true,
      supersede: true,
      cause: { actor: 'octo', commit: 'cafe', runUrl: 'https://github.com/acme/fleet/actions/runs/7', message: 'hotfix' },
      idempotencyKey: 'github:acme/fleet:7:deploy:bump:bump-agent-image:ns=prod;pools=prod/net-1;selector=tier=edge',
    });
  });

  it('--idempotency-key overrides the derived key and --no-idempotency-key drops it', async () => {
    expect((await send(['bump', 'agent-image', 'a:2', '--idempotency-key', 'mine'], github)).request.variables.input.idempotencyKey).toBe('mine');
    expect((await send(['bump', 'agent-image', 'a:2', '--no-idempotency-key'], github)).request.variables.input).not.toHaveProperty('idempotencyKey');
    expect((await send(['bump', 'agent-image', 'a:2'])).request.variables.input).toEqual({ image: 'a:2' });
  });

  it('bump node-agent-image', async () => {
    const { request } = await send([
      'bump',
      'node-agent-image',
      'caa/daemon',
      'q.io/caa:v2',
      '--mode',
      'surge',
      '--canary-node-selector',
      'canary=true',
      '--node-deadline',
      '2m',
      '--min-ready',
      '30s',
      '--failure-threshold',
      '2',
      '--peer-runtime-class',
      'kata-qemu',
      '--dry-run',
    ]);
    expect(request.variables.input).toEqual({
      namespace: 'caa',
      name: 'daemon',
      image: 'q.io/caa:v2',
      mode: 'SURGE',
      canaryNodeSelector: 'canary=true',
      nodeDeadlineSeconds: 120,
      minReadySeconds: 30,
      failureThreshold: 2,
      peerRuntimeClass: 'kata-qemu',
      dryRun: true,
    });
  });

  it('bump cluster-version', async () => {
    const { request } = await send([
      'bump',
      'cluster-version',
      'cv-1',
      '--apiserver-image',
      'k8s/apiserver:v1.30',
      '--apiserver-arg',
      '--v=2',
      '--apiserver-arg',
      '--audit=on',
      '--apiserver-env',
      'GOGC=50',
      '--apiserver-env',
      'OLD-',
      '--controller-manager-image',
      'k8s/cm:v1.30',
      '--controller-manager-arg',
      '--leader-elect',
      '--controller-manager-env',
      'X=1',
      '--spec-patch',
      '{"etcd":null}',
      '--cluster',
      't/b',
      '--cluster',
      't/a',
      '--max-concurrent',
      '3',
      '--failure-threshold',
      '2',
      '--progress-deadline',
      '900',
    ]);
    expect(request.variables.input).toEqual({
      clusterVersion: 'cv-1',
      apiServer: {
        image: 'k8s/apiserver:v1.30',
        args: ['--v=2', '--audit=on'],
        env: [
          { name: 'GOGC', value: '50' },
          { name: 'OLD', value: null },
        ],
      },
      controllerManager: { image: 'k8s/cm:v1.30', args: ['--leader-elect'], env: [{ name: 'X', value: '1' }] },
      specPatch: { etcd: null },
      clusters: ['t/a', 't/b'],
      maxConcurrent: 3,
      failureThreshold: 2,
      progressDeadlineSeconds: 900,
    });
  });

  it('rollout pause, abort and rollback', async () => {
    expect((await send(['rollout', 'pause', 'ro_1', '--reason', 'look'])).request.variables).toEqual({ id: 'ro_1', reason: 'look' });
    expect((await send(['rollout', 'abort', 'ro_1'])).request.variables).toEqual({ id: 'ro_1', reason: null });
    const rollback = await send(['rollout', 'rollback', 'ro_1', '--reason', 'bad build'], github);
    expect(rollback.request.variables).toEqual({
      id: 'ro_1',
      input: {
        cause: { actor: 'octo', commit: 'cafe', runUrl: 'https://github.com/acme/fleet/actions/runs/7', message: 'bad build' },
        idempotencyKey: 'github:acme/fleet:7:deploy:bump:rollback:ro_1',
      },
    });
  });

  it('history filters', async () => {
    const { request } = await send([
      'history',
      '--kind',
      'virtual-cluster',
      '--state',
      'failed,rolled-back',
      '--state',
      'aborted',
      '--limit',
      '5',
      '--search',
      'v1.30',
      '--target',
      'vc-1',
      '--of-version',
      'v1.30.2',
    ]);
    expect(request.variables).toEqual({
      filter: { kind: 'VIRTUAL_CLUSTER', states: ['FAILED', 'ROLLED_BACK', 'ABORTED'], search: 'v1.30', targetName: 'vc-1', version: 'v1.30.2' },
      first: 5,
      after: null,
    });
  });

  it('history fetches a --limit larger than one page page by page', async () => {
    const before = seen.length;
    let stdout = '';
    const code = await main(['history', '--limit', '30', '-o', 'json'], {
      env: { ROLLPLANE_URL: url },
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => true },
    });
    expect(code).toBe(0);
    expect(seen.slice(before).map((r) => [r.variables.first, r.variables.after])).toEqual([
      [20, null],
      [10, 'c1'],
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ totalCount: 1000 });
    expect(JSON.parse(stdout).rollouts).toHaveLength(30);
  });
});
