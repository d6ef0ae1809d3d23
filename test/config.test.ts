import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, SETTINGS } from '../src/config.js';
import { projectRoot, runService } from './helpers/child.js';

const noFiles = { fileExists: () => false, homeDir: '/home/nobody' };

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({}, [], noFiles);
    expect(config).toMatchObject({
      port: 4000,
      host: '127.0.0.1',
      databaseUrl: 'file:./data/rollplane.db',
      logLevel: 'info',
      logFormat: 'json',
      kube: { mode: 'sim', qps: 50, burst: 100 },
      sim: { fleet: 'demo' },
      shutdownTimeoutMs: 10_000,
      rollouts: { workers: 4 },
    });
    expect(Object.isFrozen(config) && Object.isFrozen(config.kube)).toBe(true);
  });

  it("reads the rollout kinds' settings", () => {
    const config = loadConfig(
      { ROLLPLANE_AGENT_STUCK_GRACE_SECONDS: 'off', ROLLPLANE_NODE_AGENT_DAEMONSETS: 'a/b, c/d', ROLLPLANE_VC_READY_TIMEOUT_SECONDS: '30' },
      ['--agent-mode', 'coexist', '--vmdhcp-controller', 'harvester-system/vmdhcp'],
      noFiles,
    );
    expect(config.agentPools).toMatchObject({
      mode: 'coexist',
      vmDhcpController: { namespace: 'harvester-system', name: 'vmdhcp' },
      stuckGraceSeconds: null,
      agentNamespace: 'harvester-system',
      serviceAccountName: 'harvester-vm-dhcp-controller-agent',
    });
    expect(loadConfig({}, ['--agent-service-account', 'dhcp.agents'], noFiles).agentPools.serviceAccountName).toBe('dhcp.agents');
    expect(config.nodeAgents.daemonSets).toEqual(['a/b', 'c/d']);
    expect(config.virtualClusters).toMatchObject({
      readyTimeoutMs: 30_000,
      partialUpgrade: true,
      keyAlgorithm: 'rsa-2048',
      vcManager: { namespace: 'vc-manager', name: 'vc-manager' },
    });
    expect(loadConfig({ ROLLPLANE_VC_MANAGER: 'none' }, [], noFiles).virtualClusters.vcManager).toBeNull();
    expect(() => loadConfig({ ROLLPLANE_VC_MANAGER: 'vc-manager' }, [], noFiles)).toThrowError(/ROLLPLANE_VC_MANAGER/);
  });

  it('takes a file: URL for SQLite or a postgresql:// URL for PostgreSQL as the history store', () => {
    expect(loadConfig({ DATABASE_URL: 'file:/var/lib/rollplane/h.db' }, [], noFiles).databaseUrl).toBe('file:/var/lib/rollplane/h.db');
    expect(loadConfig({ DATABASE_URL: 'postgresql://rp:secret@db.example:5432/rollplane' }, [], noFiles).databaseUrl).toBe(
      'postgresql://rp:secret@db.example:5432/rollplane',
    );
    expect(loadConfig({ DATABASE_URL: 'postgres://rp@db/rollplane' }, [], noFiles).databaseUrl).toBe('postgres://rp@db/rollplane');
    // The refusal says what would do, and never repeats a password.
    expect(() => loadConfig({ DATABASE_URL: 'mysql://rp:secret@db/rollplane' }, [], noFiles)).toThrowError(/postgresql:\/\/user:password@host:5432\/rollplane/);
    expect(() => loadConfig({ DATABASE_URL: 'postgresql://rp:secret@db' }, [], noFiles)).toThrowError(/needs a database name.*rp:\*\*\*@db/);
    expect(() => loadConfig({ DATABASE_URL: 'postgresql://rp:secret@db' }, [], noFiles)).not.toThrowError(/secret/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://rp:secret@db/rollplane' }, [], noFiles)).not.toThrowError(/secret/);
  });

  it('reads how many rollouts the engine reconciles at once', () => {
    expect(loadConfig({ ROLLPLANE_ROLLOUT_WORKERS: '8' }, [], noFiles).rollouts.workers).toBe(8);
    expect(loadConfig({}, ['--rollout-workers', '1'], noFiles).rollouts.workers).toBe(1);
  });

  it('reads the response cache size in MiB: 16 by default, 0 for none', () => {
    expect(loadConfig({}, [], noFiles).graphql.responseCacheBytes).toBe(16 * 1024 * 1024);
    expect(loadConfig({ ROLLPLANE_RESPONSE_CACHE_MB: '0' }, [], noFiles).graphql.responseCacheBytes).toBe(0);
    expect(loadConfig({}, ['--response-cache-mb', '64'], noFiles).graphql.responseCacheBytes).toBe(64 * 1024 * 1024);
  });

  it('prefers flags over the environment', () => {
    expect(loadConfig({ PORT: '5000' }, ['--port', '6000'], noFiles).port).toBe(6000);
  });

  it('chooses the Kubernetes mode from what the machine has', () => {
    const home = '/home/u';
    expect(loadConfig({}, [], { homeDir: home, fileExists: (f) => f === '/home/u/.kube/config' }).kube).toMatchObject({
      mode: 'kubeconfig',
      kubeconfigPath: '/home/u/.kube/config',
    });
    expect(loadConfig({ KUBECONFIG: '/k' }, [], { homeDir: home, fileExists: (f) => f === '/k' }).kube.mode).toBe('kubeconfig');
    expect(loadConfig({}, [], { homeDir: home, fileExists: (f) => f.endsWith('serviceaccount/token') }).kube.mode).toBe('in-cluster');
    expect(loadConfig({}, [], { homeDir: home, fileExists: () => false }).kube.mode).toBe('sim');
    expect(loadConfig({ ROLLPLANE_KUBE: 'sim', KUBECONFIG: '/k' }, [], { homeDir: home, fileExists: () => true }).kube.mode).toBe('sim');
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ HOST: 'bad host!' }, 'HOST'],
    [{ DATABASE_URL: 'postgres://x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://u:p@db:3306/rollplane' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'file:' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'rollplane.db' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
    [{ ROLLPLANE_KUBE: 'minikube' }, 'ROLLPLANE_KUBE'],
    [{ ROLLPLANE_KUBE: 'kubeconfig' }, 'KUBECONFIG'],
    [{ ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: '/missing' }, 'KUBECONFIG'],
    [{ ROLLPLANE_KUBE_QPS: '0' }, 'ROLLPLANE_KUBE_QPS'],
    [{ ROLLPLANE_KUBE_BURST: '1.5' }, 'ROLLPLANE_KUBE_BURST'],
    [{ ROLLPLANE_SIM_FLEET: 'huge' }, 'ROLLPLANE_SIM_FLEET'],
    [{ ROLLPLANE_SHUTDOWN_TIMEOUT_MS: '5' }, 'ROLLPLANE_SHUTDOWN_TIMEOUT_MS'],
    [{ ROLLPLANE_AGENT_MODE: 'daemonset' }, 'ROLLPLANE_AGENT_MODE'],
    // Removed (issue 14): asking for it is an error, not a silent fallback.
    [{ ROLLPLANE_AGENT_MODE: 'deployment' }, 'ROLLPLANE_AGENT_MODE'],
    [{ ROLLPLANE_VMDHCP_CONTROLLER: 'just-a-name' }, 'ROLLPLANE_VMDHCP_CONTROLLER'],
    [{ ROLLPLANE_AGENT_IMAGE: 'Not An Image' }, 'ROLLPLANE_AGENT_IMAGE'],
    [{ ROLLPLANE_AGENT_NAMESPACE: 'Harvester_System' }, 'ROLLPLANE_AGENT_NAMESPACE'],
    [{ ROLLPLANE_AGENT_SERVICE_ACCOUNT: 'Agent_SA' }, 'ROLLPLANE_AGENT_SERVICE_ACCOUNT'],
    [{ ROLLPLANE_AGENT_STUCK_GRACE_SECONDS: 'never' }, 'ROLLPLANE_AGENT_STUCK_GRACE_SECONDS'],
    [{ ROLLPLANE_NODE_AGENT_DAEMONSETS: 'just-a-name' }, 'ROLLPLANE_NODE_AGENT_DAEMONSETS'],
    // Names are checked as the API server checks them (src/util/dnsNames.ts): an empty label inside a name is refused.
    [{ ROLLPLANE_NODE_AGENT_DAEMONSETS: 'kube-system/a..b' }, 'ROLLPLANE_NODE_AGENT_DAEMONSETS'],
    [{ ROLLPLANE_VC_MANAGER: 'vc-system/vc-.manager' }, 'ROLLPLANE_VC_MANAGER'],
    [{ ROLLPLANE_VC_KEY_ALGORITHM: 'dsa' }, 'ROLLPLANE_VC_KEY_ALGORITHM'],
    [{ ROLLPLANE_VC_READY_TIMEOUT_SECONDS: '0' }, 'ROLLPLANE_VC_READY_TIMEOUT_SECONDS'],
    [{ ROLLPLANE_LEASE_DURATION_MS: '5000', ROLLPLANE_LEASE_RENEW_DEADLINE_MS: '6000' }, 'ROLLPLANE_LEASE_RENEW_DEADLINE_MS'],
    [{ ROLLPLANE_AUTH: 'maybe' }, 'ROLLPLANE_AUTH'],
    [{ ROLLPLANE_CORS_ORIGINS: 'not a url' }, 'ROLLPLANE_CORS_ORIGINS'],
    [{ ROLLPLANE_TLS_CERT: '/x.crt' }, 'ROLLPLANE_TLS_KEY'],
    [{ ROLLPLANE_CONTROLLERS: 'sometimes' }, 'ROLLPLANE_CONTROLLERS'],
    [{ ROLLPLANE_ROLLOUT_WORKERS: '0' }, 'ROLLPLANE_ROLLOUT_WORKERS'],
    [{ ROLLPLANE_ROLLOUT_WORKERS: 'many' }, 'ROLLPLANE_ROLLOUT_WORKERS'],
    [{ ROLLPLANE_RESPONSE_CACHE_MB: '-1' }, 'ROLLPLANE_RESPONSE_CACHE_MB'],
    [{ ROLLPLANE_RESPONSE_CACHE_MB: '1.5' }, 'ROLLPLANE_RESPONSE_CACHE_MB'],
    [{ ROLLPLANE_RESPONSE_CACHE_MB: '5000' }, 'ROLLPLANE_RESPONSE_CACHE_MB'],
  ])('refuses %o naming %s', (env, setting) => {
    expect(() => loadConfig(env, [], noFiles)).toThrowError(ConfigError);
    expect(() => loadConfig(env, [], noFiles)).toThrowError(new RegExp(`^invalid configuration: ${setting}: `));
  });

  it('refuses unknown flags', () => {
    expect(() => loadConfig({}, ['--prot', '1'], noFiles)).toThrowError(/invalid configuration: command line: .*--prot/);
  });

  it('documents every setting and its default in the README', () => {
    const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    for (const setting of SETTINGS) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${setting.env}\``));
      expect(row, `README row for ${setting.env}`).toBeDefined();
      expect(row).toContain(`\`${setting.flag}\``);
      expect(row).toContain(setting.default);
    }
  });
});

describe('the service with a bad setting', () => {
  it('exits non-zero with a message naming the setting, before touching anything', async () => {
    const result = await runService({ PORT: 'eighty' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('invalid configuration: PORT: must be an integer');
  });
});
