import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceProcess } from '../helpers/child.js';
import { runCli, startCli } from './cliHarness.js';
import { until } from '../helpers/until.js';

/** The CLI against a server that requires tokens (ROLLPLANE_AUTH=on, admin token from the environment). */

const ADMIN = 'admin-token-for-cli-tests-0123456789abcdef';
let server: ServiceProcess;

beforeAll(async () => {
  server = await startService({
    ROLLPLANE_AUTH: 'on',
    ROLLPLANE_ADMIN_TOKEN: ADMIN,
    ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1',
    ROLLPLANE_LEADER_ELECT: 'false',
    DATABASE_URL: `file:${process.env.TMPDIR ?? '/tmp'}/rollplane-cli-auth-${process.pid}-${Date.now()}.db`,
  });
}, 180_000); // above startService's own bound: only a service that never starts should fail here

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
});

const as = (token?: string) => ({ ROLLPLANE_URL: server.url, ...(token ? { ROLLPLANE_TOKEN: token } : {}) });

describe('rollplane with authentication on', () => {
  it('exits 3 without a token or with a wrong one, without retrying', async () => {
    const [none, wrong] = await Promise.all([runCli(['history', '-o', 'json'], as()), runCli(['history', '-o', 'json'], as('rp_not-a-real-token'))]);
    for (const run of [none, wrong]) {
      expect(run.code).toBe(3);
      expect(JSON.parse(run.stdout)).toMatchObject({ exitCode: 3, error: { code: 'UNAUTHENTICATED' } });
      expect(run.stderr).not.toContain('retrying');
    }
  });

  it('manages tokens as admin; roles decide what each token may do; a revoked token stops working', async () => {
    const [deployer, viewer] = await Promise.all([
      runCli(['token', 'create', 'ci-deployer', '--role', 'deployer', '--expires-in', '30d'], as(ADMIN)),
      runCli(['token', 'create', 'dashboard', '--role', 'viewer', '-o', 'json'], as(ADMIN)),
    ]);
    expect(deployer.code, deployer.stderr).toBe(0);
    // Text mode: the secret alone on stdout (for `TOKEN=$(rollplane token create …)`), the rest on stderr.
    const deployerSecret = deployer.stdout.trim();
    expect(deployerSecret).toMatch(/^\S+$/);
    expect(deployer.stderr).toContain('ci-deployer, deployer, expires');
    const created = JSON.parse(viewer.stdout);
    expect(created.token).toMatchObject({ name: 'dashboard', role: 'viewer', expiresAt: null });
    const viewerSecret = created.secret as string;

    const [bump, viewerPause, deployerTokens, list] = await Promise.all([
      runCli(['bump', 'agent-image', 'rancher/harvester-vm-dhcp-agent:v0.3.1', '--wait', '-o', 'json'], as(deployerSecret)),
      runCli(['rollout', 'pause', 'ro_whatever', '-o', 'json'], as(viewerSecret)),
      runCli(['token', 'list'], as(deployerSecret)),
      runCli(['token', 'list', '-o', 'json'], as(ADMIN)),
    ]);
    // The deployer's bump, followed over an authenticated WebSocket to the end.
    expect(bump.code, bump.stderr).toBe(0);
    expect(JSON.parse(bump.stdout).rollout).toMatchObject({ state: 'SUCCEEDED', progress: { total: 2, succeeded: 2 } });
    expect(viewerPause.code).toBe(3);
    expect(JSON.parse(viewerPause.stdout).error.code).toBe('FORBIDDEN');
    expect(deployerTokens.code).toBe(3);
    expect(list.code).toBe(0);
    const tokens = JSON.parse(list.stdout).tokens as { id: string; name: string }[];
    expect(tokens.map((t) => t.name)).toEqual(expect.arrayContaining(['ci-deployer', 'dashboard']));

    const id = tokens.find((t) => t.name === 'ci-deployer')!.id;
    const revoke = await runCli(['token', 'revoke', id], as(ADMIN));
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.stdout).toContain(`revoked token ${id} (ci-deployer)`);
    const after = await runCli(['history'], as(deployerSecret));
    expect(after.code).toBe(3);
    expect(after.stderr).toContain('[UNAUTHENTICATED]');
  });

  it('ends a --wait at once with exit 3 when its token is revoked', async () => {
    const created = JSON.parse((await runCli(['token', 'create', 'canary-bot', '--role', 'deployer', '-o', 'json'], as(ADMIN))).stdout);
    // A canary of one pool pauses the rollout after it, so the wait cannot end by itself.
    const cli = startCli(['bump', 'agent-image', 'rancher/harvester-vm-dhcp-agent:v0.4.0', '--canary', '1', '--wait'], as(created.secret));
    await until('the canary pause', () => cli.stderr().includes('continue it with: rollplane rollout resume'), 30_000);
    const revoke = await runCli(['token', 'revoke', created.token.id], as(ADMIN));
    expect(revoke.code).toBe(0);
    const run = await cli.done;
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/revoked|UNAUTHENTICATED|FORBIDDEN/);
  });
});
