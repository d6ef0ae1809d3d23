import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { gql } from '../helpers/graphql.js';
import { runCli, startCli } from '../cli/cliHarness.js';
import { startFaultProxy } from '../cli/faultProxy.js';
import { until } from '../helpers/until.js';

/**
 * The CLI end to end, as a CI pipeline runs it: server and simulator in one child process (3 IPPools), the CLI in
 * another. Auth is off here (loopback); test/cli/auth.test.ts covers tokens.
 */

const IMAGE = 'rancher/harvester-vm-dhcp-agent';
let server: ServiceProcess;

const githubStep = (attempt: string) => ({
  GITHUB_ACTIONS: 'true',
  GITHUB_REPOSITORY: 'acme/fleet',
  GITHUB_RUN_ID: '4242',
  GITHUB_RUN_ATTEMPT: attempt,
  GITHUB_JOB: 'deploy',
  GITHUB_ACTION: 'bump',
  GITHUB_SHA: '0123456789abcdef',
  GITHUB_ACTOR: 'octocat',
  GITHUB_SERVER_URL: 'https://github.com',
});

beforeAll(async () => {
  server = await startService({
    ROLLPLANE_SIM_FLEET: 'pools=3,nodes=2,clusters=1',
    ROLLPLANE_LEADER_ELECT: 'false',
    ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
    DATABASE_URL: `file:${process.env.TMPDIR ?? '/tmp'}/rollplane-cli-e2e-${process.pid}-${Date.now()}.db`,
  });
}, 60_000);

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
});

async function rolloutsWithKey(key: string): Promise<{ id: string; idempotencyKey: string }[]> {
  const res = await gql(server.url, '{ rollouts(first: 100) { edges { node { id idempotencyKey } } } }');
  return res.data.rollouts.edges
    .map((e: { node: { id: string; idempotencyKey: string } }) => e.node)
    .filter((r: { idempotencyKey: string }) => r.idempotencyKey === key);
}

describe('rollplane bump (end to end)', () => {
  it('previews with --dry-run and changes nothing', async () => {
    const run = await runCli(['bump', 'agent-image', `${IMAGE}:v0.3.1`, '--dry-run', '-o', 'json'], { ROLLPLANE_URL: server.url });
    expect(run.code).toBe(0);
    const payload = JSON.parse(run.stdout);
    expect(payload).toMatchObject({ dryRun: true, created: false });
    expect(payload.plan.map((p: { name: string; action: string }) => `${p.name}:${p.action}`).sort()).toEqual(['net-1:change', 'net-2:change', 'net-3:change']);
    const res = await gql(server.url, '{ rollouts { totalCount } }');
    expect(res.data.rollouts.totalCount).toBe(0);
  });

  it('maps node-agent-image and cluster-version flags onto inputs the server accepts (dry runs)', async () => {
    const [nodeAgent, clusterVersion] = await Promise.all([
      runCli(
        [
          'bump',
          'node-agent-image',
          'confidential-containers-system/cloud-api-adaptor-daemonset',
          'quay.io/confidential-containers/cloud-api-adaptor:v0.10.1',
          '--mode',
          'surge',
          '--node-deadline',
          '5m',
          '--min-ready',
          '5s',
          '--failure-threshold',
          '2',
          '--peer-runtime-class',
          'kata-remote',
          '--dry-run',
          '-o',
          'json',
        ],
        { ROLLPLANE_URL: server.url },
      ),
      runCli(
        [
          'bump',
          'cluster-version',
          'cv-sample-np',
          '--apiserver-image',
          'registry.k8s.io/kube-apiserver:v1.30.1',
          '--apiserver-arg',
          '--v=2',
          '--apiserver-env',
          'GOGC=50',
          '--controller-manager-image',
          'registry.k8s.io/kube-controller-manager:v1.30.1',
          '--max-concurrent',
          '2',
          '--progress-deadline',
          '10m',
          '--dry-run',
          '-o',
          'json',
        ],
        { ROLLPLANE_URL: server.url },
      ),
    ]);
    expect(nodeAgent.code, nodeAgent.stderr).toBe(0);
    const agentPlan = JSON.parse(nodeAgent.stdout);
    expect(agentPlan.rollout).toMatchObject({
      kind: 'NODE_AGENT',
      toVersion: 'quay.io/confidential-containers/cloud-api-adaptor:v0.10.1',
      strategy: { mode: 'SURGE', failureThreshold: 2 },
    });
    expect(agentPlan.plan.length).toBe(2);
    expect(clusterVersion.code, clusterVersion.stderr).toBe(0);
    const cvPlan = JSON.parse(clusterVersion.stdout);
    expect(cvPlan.rollout).toMatchObject({ kind: 'VIRTUAL_CLUSTER', strategy: { maxConcurrent: 2, progressDeadlineSeconds: 600 } });
    expect(cvPlan.plan).toHaveLength(1);
  });

  it('--wait follows the bump to SUCCEEDED (exit 0); a retried CI step returns the same rollout', async () => {
    const cli = startCli(['bump', 'agent-image', `${IMAGE}:v0.3.2`, '--max-unavailable', '2', '--wait', '-o', 'json'], {
      ROLLPLANE_URL: server.url,
      ...githubStep('1'),
    });
    const run = await cli.done;
    expect(run.code, run.stderr).toBe(0);
    const payload = JSON.parse(run.stdout);
    expect(payload.created).toBe(true);
    expect(payload.rollout).toMatchObject({
      state: 'SUCCEEDED',
      toVersion: `${IMAGE}:v0.3.2`,
      progress: { total: 3, succeeded: 3 },
      cause: { actor: 'octocat', commit: '0123456789abcdef', runUrl: 'https://github.com/acme/fleet/actions/runs/4242' },
      idempotencyKey: 'github:acme/fleet:4242:deploy:bump:bump-agent-image:all-pools',
    });
    expect(run.stderr).toMatch(/PROGRESSING \d+% \(\d\/3 succeeded/);
    // Each target's own changes, as they happened (a CI log: plain lines, no colour).
    for (const pool of ['net-1', 'net-2', 'net-3']) {
      expect(run.stderr).toMatch(new RegExp(`Z {3}default/${pool} PROGRESSING\n[\\s\\S]*Z {3}default/${pool} SUCCEEDED\n`));
    }
    expect(run.stderr).not.toContain('\x1b[');

    // "Re-run failed jobs": same run id, next attempt.
    const again = await runCli(['bump', 'agent-image', `${IMAGE}:v0.3.2`, '--max-unavailable', '2', '--wait', '-o', 'json'], {
      ROLLPLANE_URL: server.url,
      ...githubStep('2'),
    });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, rollout: { id: payload.rollout.id, state: 'SUCCEEDED' } });
    expect(await rolloutsWithKey(payload.rollout.idempotencyKey)).toHaveLength(1);
  });

  it('retries a request whose answer was lost with the same key, creating one rollout', async () => {
    const proxy = await startFaultProxy(server.url, (n) => (n === 1 ? { kind: 'lose-response' } : { kind: 'forward' }));
    try {
      const run = await runCli(['bump', 'agent-image', `${IMAGE}:v0.3.3`, '--idempotency-key', 'lost-answer-1', '-o', 'json'], { ROLLPLANE_URL: proxy.url });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/retrying in/);
      expect(proxy.requests).toHaveLength(2);
      expect(proxy.requests[0]!.variables.input.idempotencyKey).toBe('lost-answer-1');
      expect(proxy.requests[1]!.variables).toEqual(proxy.requests[0]!.variables);
      expect(JSON.parse(run.stdout).created).toBe(false);
      expect(await rolloutsWithKey('lost-answer-1')).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('retries 503 and 429 (honouring Retry-After), then succeeds', async () => {
    const proxy = await startFaultProxy(server.url, (n) =>
      n === 1
        ? { kind: 'answer', status: 503, body: { errors: [{ message: 'upstream restarting' }] } }
        : n === 2
          ? {
              kind: 'answer',
              status: 429,
              headers: { 'retry-after': '1' },
              body: { errors: [{ message: 'slow down', extensions: { code: 'RATE_LIMITED', retryAfterSeconds: 1 } }] },
            }
          : { kind: 'forward' },
    );
    try {
      const run = await runCli(['history', '-o', 'json'], { ROLLPLANE_URL: proxy.url });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('HTTP 503');
      expect(run.stderr).toContain('rate limited (HTTP 429); retrying in 1.0s');
      expect(proxy.requests).toHaveLength(3);
      expect(JSON.parse(run.stdout).totalCount).toBeGreaterThanOrEqual(1);
    } finally {
      await proxy.close();
    }
  });

  it('reports the server refusing a bad input with its field (exit 2)', async () => {
    const run = await runCli(['bump', 'agent-image', `${IMAGE}:v0.3.4`, '--selector', 'a in (b', '-o', 'json'], { ROLLPLANE_URL: server.url });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'BAD_USER_INPUT', field: expect.stringMatching(/labelSelector/) }, exitCode: 2 });
  });

  it('lists history with filters', async () => {
    const [run, text] = await Promise.all([
      runCli(['history', '--kind', 'agent-pool', '--state', 'succeeded,failed', '--search', 'octocat', '-o', 'json'], { ROLLPLANE_URL: server.url }),
      runCli(['history', '--limit', '500'], { ROLLPLANE_URL: server.url }),
    ]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.totalCount).toBe(1);
    expect(doc.rollouts[0]).toMatchObject({ kind: 'AGENT_POOL', state: 'SUCCEEDED', toVersion: `${IMAGE}:v0.3.2` });
    expect(text.stdout).toMatch(/^ID\s+KIND\s+STATE/);
  });

  it('rollback --wait returns the pools to the previous image (exit 0)', async () => {
    const history = await gql(server.url, '{ rollouts(filter: {search: "octocat"}) { edges { node { id } } } }');
    const id = history.data.rollouts.edges[0].node.id as string;
    // v0.3.3 (from the lost-answer test) may still be rolling; wait for the fleet to be quiet first.
    await until(
      'no active rollout',
      async () => (await gql(server.url, '{ rollouts(filter: {states: [PENDING, PROGRESSING, PAUSED]}) { totalCount } }')).data.rollouts.totalCount === 0,
      30_000,
    );
    const run = await runCli(['rollout', 'rollback', id, '--reason', 'bad build', '--wait', '-o', 'json'], { ROLLPLANE_URL: server.url });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).rollout).toMatchObject({ state: 'SUCCEEDED', cause: { message: 'bad build' } });
  });
});

describe('rollplane fleet and drift (end to end)', () => {
  it('fleet shows the targets of each kind, the drift and the active rollouts', async () => {
    const run = await runCli(['fleet'], { ROLLPLANE_URL: server.url });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^KIND\s+TARGETS\s+DRIFTED\s+NOTE\nagent pools\s+3\s+0\s*\nvirtual clusters\s+1\s+/m);
    expect(run.stdout).toMatch(/^drift: \d+ targets? \(rollplane drift lists them\)$/m);
    const json = JSON.parse((await runCli(['fleet', '-o', 'json'], { ROLLPLANE_URL: server.url })).stdout);
    expect(json).toMatchObject({ agentPools: { totalCount: 3 }, virtualClusters: { totalCount: 1 } });
  });

  it('drift lists what runs another version than it should and exits 1, or says there is none and exits 0', async () => {
    const run = await runCli(['drift', '-o', 'json'], { ROLLPLANE_URL: server.url });
    const doc = JSON.parse(run.stdout) as { totalCount: number; items: { kind: string; name: string }[] };
    expect(run.code).toBe(doc.totalCount > 0 ? 1 : 0);
    expect(doc.items).toHaveLength(Math.min(doc.totalCount, 100));
    const text = await runCli(['drift', '--kind', 'agent-pool'], { ROLLPLANE_URL: server.url });
    expect(text.code).toBe(0);
    expect(text.stdout.trim()).toBe('no drift: every target runs its desired version');
  });
});

describe('rollplane exit codes', () => {
  it('exits 2 on a usage error', async () => {
    const run = await runCli(['bump', 'agent-image', 'a:1', '--max-unavailable', '0%'], { ROLLPLANE_URL: server.url });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("option '--max-unavailable <n|%>' argument '0%' is invalid");
  });

  it('exits 3 when nothing listens', async () => {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const run = await runCli(['rollout', 'status', 'ro_1', '--retries', '1', '-o', 'json'], { ROLLPLANE_URL: `http://127.0.0.1:${port}/graphql` });
    expect(run.code).toBe(3);
    expect(JSON.parse(run.stdout)).toMatchObject({ exitCode: 3, error: { code: 'UNAVAILABLE' } });
    expect(run.stderr).toContain('ECONNREFUSED');
  });
});
