import { describe, expect, it } from 'vitest';
import { main } from '../../src/rollplane.js';

/** `main()` in-process: usage errors never reach the network, so no server is needed. */
async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main([...args, '--url', 'http://127.0.0.1:9/graphql'], {
    env: {},
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
  });
  return { code, stdout, stderr };
}

describe('rollplane usage errors', () => {
  it.each([
    [['bump', 'agent-image'], "missing required argument 'image'"],
    [['bump', 'agent-image', 'UPPER/case:1'], 'is not a valid image reference'],
    [['bump', 'agent-image', 'a:1', '--max-unavailable', '0'], 'Expected a positive count'],
    [['bump', 'agent-image', 'a:1', '--max-unavailable', '101%'], 'between 1% and 100%'],
    [['bump', 'agent-image', 'a:1', '--canary', '-1'], 'Expected a whole number'],
    [['bump', 'agent-image', 'a:1', '--pool', 'a/b/c'], 'Expected namespace/name'],
    [['bump', 'agent-image', 'a:1', '--namespace', 'Prod'], 'DNS-1123 label'],
    [['bump', 'agent-image', 'a:1', '--progress-deadline', '10 minutes'], 'Expected seconds'],
    [['bump', 'agent-image', 'a:1', '--unknown-flag'], "unknown option '--unknown-flag'"],
    [['bump', 'node-agent-image', 'no-namespace', 'a:1'], 'Expected namespace/name'],
    [['bump', 'node-agent-image', 'ns/ds', 'a:1', '--mode', 'sideways'], 'Expected one of node-by-node, surge'],
    [['bump', 'cluster-version', 'cv-1'], 'nothing to change'],
    [['bump', 'cluster-version', 'cv-1', '--spec-patch', '{nope'], 'Expected a JSON document'],
    [['bump', 'cluster-version', 'cv-1', '--apiserver-env', '=x'], 'NAME=VALUE'],
    [['rollout', 'status', 'ro_1', '--timeout', 'soon'], 'Expected seconds'],
    [['rollout', 'status'], "missing required argument 'id'"],
    [['history', '--state', 'bogus'], 'Expected one of pending'],
    [['history', '--limit', '0'], 'between 1 and 500'],
    [['token', 'create', 'Bad_Name', '--role', 'admin'], 'DNS-1123 label'],
    [['token', 'create', 'ci', '--role', 'root'], 'Expected one of viewer, deployer, admin'],
    [['token', 'create', 'ci'], "required option '--role <role>' not specified"],
    [['bump', 'agent-image', 'a:1', '--output', 'yaml'], 'Allowed choices are text, json'],
  ])('%j exits 2: %s', async (args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
  });

  it('in json mode reports a refused flag combination as a JSON document too', async () => {
    const result = await run(['bump', 'cluster-version', 'cv-1', '-o', 'json']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ exitCode: 2, error: { code: 'BAD_USER_INPUT', field: 'cluster-version' } });
  });

  it('exits 0 for --help and --version', async () => {
    expect((await run(['bump', 'agent-image', '--help'])).code).toBe(0);
    const version = await run(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});
