import { describe, expect, it } from 'vitest';
import { agentImageInput } from '../../src/kinds/agentPool/cli.js';
import { nodeAgentImageInput } from '../../src/kinds/nodeAgent/cli.js';
import { clusterVersionInput } from '../../src/kinds/virtualCluster/cli.js';
import { defaultIdempotencyKey, detectCi } from '../../src/cli/ciContext.js';

const github = {
  GITHUB_ACTIONS: 'true',
  GITHUB_REPOSITORY: 'acme/fleet',
  GITHUB_RUN_ID: '9001',
  GITHUB_RUN_ATTEMPT: '1',
  GITHUB_JOB: 'deploy',
  GITHUB_ACTION: 'bump',
  GITHUB_SHA: 'abc123',
  GITHUB_ACTOR: 'octocat',
  GITHUB_SERVER_URL: 'https://github.example.com',
};
const gitlab = {
  GITLAB_CI: 'true',
  CI_PROJECT_PATH: 'acme/fleet',
  CI_PIPELINE_ID: '77',
  CI_JOB_NAME: 'deploy-prod',
  CI_JOB_ID: '1234',
  CI_PIPELINE_URL: 'https://gitlab.example.com/acme/fleet/-/pipelines/77',
  CI_COMMIT_SHA: 'def456',
  GITLAB_USER_LOGIN: 'alice',
};

describe('detectCi', () => {
  it('reads the cause from GitHub Actions, building the run URL', () => {
    expect(detectCi(github).cause).toEqual({ actor: 'octocat', commit: 'abc123', runUrl: 'https://github.example.com/acme/fleet/actions/runs/9001' });
  });

  it('reads the cause from GitLab CI', () => {
    expect(detectCi(gitlab).cause).toEqual({ actor: 'alice', commit: 'def456', runUrl: 'https://gitlab.example.com/acme/fleet/-/pipelines/77' });
  });

  it('gives the same step identity to every attempt of a GitHub step, and different ones to other steps and runs', () => {
    const first = detectCi(github).stepIdentity;
    expect(detectCi({ ...github, GITHUB_RUN_ATTEMPT: '2' }).stepIdentity).toBe(first);
    expect(detectCi({ ...github, GITHUB_ACTION: '__run_2' }).stepIdentity).not.toBe(first);
    expect(detectCi({ ...github, GITHUB_JOB: 'canary' }).stepIdentity).not.toBe(first);
    expect(detectCi({ ...github, GITHUB_RUN_ID: '9002' }).stepIdentity).not.toBe(first);
  });

  it('gives a retried GitLab job (new CI_JOB_ID) the same identity', () => {
    expect(detectCi({ ...gitlab, CI_JOB_ID: '1235' }).stepIdentity).toBe(detectCi(gitlab).stepIdentity);
    expect(detectCi({ ...gitlab, CI_PIPELINE_ID: '78' }).stepIdentity).not.toBe(detectCi(gitlab).stepIdentity);
  });

  it('finds nothing outside CI', () => {
    expect(detectCi({ HOME: '/root' })).toEqual({ provider: undefined, stepIdentity: undefined, cause: {} });
  });
});

describe('defaultIdempotencyKey', () => {
  it('combines the step with the operation and the target', () => {
    const ci = detectCi(github);
    const a = defaultIdempotencyKey(ci, 'bump-agent-image', 'all-pools');
    expect(a).toBe('github:acme/fleet:9001:deploy:bump:bump-agent-image:all-pools');
    expect(defaultIdempotencyKey(ci, 'bump-agent-image', 'ns=prod')).not.toBe(a);
    expect(defaultIdempotencyKey(ci, 'bump-node-agent-image', 'all-pools')).not.toBe(a);
  });

  it('keeps long keys under the server limit, still distinct', () => {
    const ci = detectCi(github);
    const a = defaultIdempotencyKey(ci, 'bump-agent-image', `pools=${'x'.repeat(400)}a`)!;
    const b = defaultIdempotencyKey(ci, 'bump-agent-image', `pools=${'x'.repeat(400)}b`)!;
    expect(a.length).toBeLessThanOrEqual(200);
    expect(a).not.toBe(b);
  });

  it('is undefined outside CI', () => {
    expect(defaultIdempotencyKey(detectCi({}), 'bump-agent-image', 'all-pools')).toBeUndefined();
  });
});

describe('bump inputs', () => {
  const ci = detectCi(github);

  it('sends member clusters only when given, and keys a CI bump of other clusters apart', () => {
    const ci = detectCi(github);
    expect(agentImageInput('a:1', {}, ci).input.memberClusters).toBeUndefined();
    const across = agentImageInput('a:1', { clusters: ['edge-2', 'edge-1', 'edge-2'], clusterSelector: 'tier=edge' }, ci);
    expect(across.input.memberClusters).toEqual({ names: ['edge-1', 'edge-2'], labelSelector: 'tier=edge' });
    expect(across.target).toBe('all-pools;memberClusters=edge-1,edge-2,selector=tier=edge');
    // The same step bumping edge-1 and then edge-2 derives two keys, not one (a retry would otherwise CONFLICT).
    const one = agentImageInput('a:1', { clusters: ['edge-1'] }, ci).input.idempotencyKey;
    const two = agentImageInput('a:1', { clusters: ['edge-2'] }, ci).input.idempotencyKey;
    expect(one).not.toBe(two);
    // Without clusters, the derived key is what it was.
    expect(agentImageInput('a:1', {}, ci).input.idempotencyKey).toBe(defaultIdempotencyKey(ci, 'bump-agent-image', 'all-pools'));
    expect(nodeAgentImageInput('ns/ds', 'a:1', { clusters: ['edge-1'] }, ci).input.memberClusters).toEqual({ names: ['edge-1'] });
  });

  it('maps agent-image flags to BumpAgentImageInput, sending only what was given', () => {
    const { input } = agentImageInput(
      'registry.example.com/agent:v2',
      {
        namespace: ['prod', 'edge'],
        pool: ['prod/net-1'],
        selector: 'tier=a',
        maxUnavailable: '25%',
        canary: 2,
        progressDeadline: 300,
        failureThreshold: 3,
        autoRollback: true,
        allowDowngrade: true,
        supersede: true,
        message: 'why',
      },
      ci,
    );
    expect(input).toEqual({
      image: 'registry.example.com/agent:v2',
      pools: { namespaces: ['edge', 'prod'], names: ['prod/net-1'], labelSelector: 'tier=a' },
      strategy: { maxUnavailable: '25%', canary: 2, progressDeadlineSeconds: 300, failureThreshold: 3, autoRollback: true },
      allowDowngrade: true,
      supersede: true,
      cause: { actor: 'octocat', commit: 'abc123', runUrl: 'https://github.example.com/acme/fleet/actions/runs/9001', message: 'why' },
      idempotencyKey: 'github:acme/fleet:9001:deploy:bump:bump-agent-image:ns=edge,prod;pools=prod/net-1;selector=tier=a',
    });
    expect(agentImageInput('a:1', {}, detectCi({})).input).toEqual({ image: 'a:1' });
    // --no-auto-rollback: the server rolls a failed agent-pool rollout back unless told not to (issue 27).
    expect(agentImageInput('a:1', { autoRollback: false }, detectCi({})).input).toEqual({ image: 'a:1', strategy: { autoRollback: false } });
  });

  it('lets flags override the cause and the key, and --no-idempotency-key drop it', () => {
    const { input } = agentImageInput('a:1', { actor: 'bob', commit: 'c0ffee', idempotencyKey: 'mine' }, ci);
    expect(input.cause).toMatchObject({ actor: 'bob', commit: 'c0ffee' });
    expect(input.idempotencyKey).toBe('mine');
    expect(agentImageInput('a:1', { idempotencyKey: false }, ci).input.idempotencyKey).toBeUndefined();
  });

  it('sends no derived key with a dry run', () => {
    const { input } = agentImageInput('a:1', { dryRun: true }, ci);
    expect(input.dryRun).toBe(true);
    expect(input.idempotencyKey).toBeUndefined();
  });

  it('orders repeated flags so equal requests give equal keys', () => {
    const a = agentImageInput('a:1', { pool: ['x/b', 'x/a'] }, ci).input.idempotencyKey;
    const b = agentImageInput('a:1', { pool: ['x/a', 'x/b'] }, ci).input.idempotencyKey;
    expect(a).toBe(b);
  });

  it('maps node-agent-image flags to BumpNodeAgentImageInput', () => {
    const { input } = nodeAgentImageInput(
      'caa/daemon',
      'q.io/caa:v2',
      { mode: 'SURGE', canaryNodeSelector: 'canary=true', nodeDeadline: 120, minReady: 5, failureThreshold: 2, peerRuntimeClass: 'kata' },
      detectCi({}),
    );
    expect(input).toEqual({
      namespace: 'caa',
      name: 'daemon',
      image: 'q.io/caa:v2',
      mode: 'SURGE',
      canaryNodeSelector: 'canary=true',
      nodeDeadlineSeconds: 120,
      minReadySeconds: 5,
      failureThreshold: 2,
      peerRuntimeClass: 'kata',
    });
  });

  it('maps cluster-version flags to BumpClusterVersionInput and refuses a bump that changes nothing', () => {
    const { input } = clusterVersionInput(
      'cv-1',
      {
        apiserverImage: 'k8s/apiserver:v1.30',
        apiserverArg: ['--v=2'],
        apiserverEnv: [
          { name: 'A', value: '1' },
          { name: 'B', value: null },
        ],
        controllerManagerImage: 'k8s/cm:v1.30',
        cluster: ['t/b', 't/a'],
        maxConcurrent: 3,
        failureThreshold: 2,
        progressDeadline: 900,
      },
      detectCi({}),
    );
    expect(input).toEqual({
      clusterVersion: 'cv-1',
      apiServer: {
        image: 'k8s/apiserver:v1.30',
        args: ['--v=2'],
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: null },
        ],
      },
      controllerManager: { image: 'k8s/cm:v1.30' },
      clusters: ['t/a', 't/b'],
      maxConcurrent: 3,
      failureThreshold: 2,
      progressDeadlineSeconds: 900,
    });
    expect(() => clusterVersionInput('cv-1', {}, detectCi({}))).toThrow(/nothing to change/);
    expect(() => clusterVersionInput('cv-1', { specPatch: [1] }, detectCi({}))).toThrow(/JSON object/);
  });
});

describe('endpoint', () => {
  it('completes a bare server address with /graphql and leaves a full one alone', async () => {
    const { endpoint } = await import('../../src/cli/runtime.js');
    expect(endpoint('https://rollplane.example.com')).toBe('https://rollplane.example.com/graphql');
    expect(endpoint('http://127.0.0.1:4000/')).toBe('http://127.0.0.1:4000/graphql');
    expect(endpoint('http://10.0.0.1:4000/api/graphql')).toBe('http://10.0.0.1:4000/api/graphql');
  });
});
