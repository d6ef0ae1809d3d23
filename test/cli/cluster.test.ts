import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';
import { type CliRun, runCli } from './cliHarness.js';

/**
 * `rollplane cluster add/list/label/remove` as a person or a pipeline runs it: the CLI in a child process against the
 * real server on port 0 (auth on) and a simulated member cluster. Exit codes as every command's (src/cli/exitCodes.ts):
 * 0 done, 1 refused (CONFLICT, NOT_FOUND), 2 usage or bad input, 3 token refused. The planted token in the
 * kubeconfig never appears in the CLI's output.
 */

const ADMIN = 'admin-secret-for-the-cluster-cli-0123456789';
const PLANTED = 'planted-cli-member-token-51c0e2a9d4b74f13';
let dir: string;
let fleet: SimulatedClusters;
let app: TestApp;
let viewer: string;
const runs: CliRun[] = [];

async function cli(args: string[], token = ADMIN): Promise<CliRun> {
  const run = await runCli(['cluster', ...args], { ROLLPLANE_URL: app.url, ROLLPLANE_TOKEN: token });
  runs.push(run);
  return run;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-cluster-cli-'));
  fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', labels: {}, fleet: 'empty', behaviour: false }] });
  app = await startTestApp({
    env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '200', ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '50' },
  });
  const created = await gql(
    app.url,
    'mutation { createApiToken(input: { name: "cli-viewer", role: viewer }) { secret } }',
    {},
    { authorization: `Bearer ${ADMIN}` },
  );
  viewer = created.data.createApiToken.secret;
  const doc = parse(fleet.clusters.get('edge-1')!.kubeconfig) as { users: { user: Record<string, unknown> }[] };
  doc.users[0]!.user = { token: PLANTED };
  writeFileSync(path.join(dir, 'edge-1.kubeconfig'), stringify(doc), { mode: 0o600 });
  writeFileSync(path.join(dir, 'broken.kubeconfig'), `users:\n  - name: x\n    user: { token: ${PLANTED} }\n  bad: [\n`, { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('rollplane cluster', () => {
  it('adds a member from a kubeconfig file with --verify and labels, and lists it READY (text, JSON, --selector)', async () => {
    const added = await cli(['add', 'edge-1', '--kubeconfig', path.join(dir, 'edge-1.kubeconfig'), '--label', 'env=prod', '--label', 'region=eu', '--verify']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/registered member cluster edge-1 \(API, (CONNECTING|READY), env=prod,region=eu\)/);
    await until('edge-1 READY', () => app.domain.clusters!.find('edge-1').then((c) => c?.health.state === 'READY'));

    const table = await cli(['list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+HEALTH\s+SINCE\s+VERSION\s+SOURCE\s+LABELS\s+KINDS/);
    expect(table.stdout).toMatch(/edge-1\s+READY\s+\S+\s+v1\.\S+\s+API\s+env=prod,region=eu\s+AGENT_POOL,NODE_AGENT/);
    expect(table.stdout).toMatch(/local\s+READY/);

    const json = await cli(['list', '--selector', 'env=prod,region in (eu,us)', '-o', 'json']);
    expect(JSON.parse(json.stdout).clusters.map((c: { name: string }) => c.name)).toEqual(['edge-1']);
  });

  it('relabels with key=value and key-, and removes the member', async () => {
    const labelled = await cli(['label', 'edge-1', 'tier=edge', 'region-']);
    expect(labelled.code).toBe(0);
    expect(labelled.stdout).toContain('env=prod,tier=edge');
    const removed = await cli(['remove', 'edge-1']);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('deregistered member cluster edge-1');
    expect((await app.domain.clusters!.list()).map((c) => c.name)).toEqual(['local']);
  });

  it('exits 2 on bad input, 1 on a refusal, 3 for a token without the role; nothing changes', async () => {
    const file = readFileSync(path.join(path.dirname(app.databaseFile), 'member-clusters.yaml'), 'utf8');
    const expectations: [string[], number, RegExp, string?][] = [
      [['add', 'edge-2', '--kubeconfig', path.join(dir, 'broken.kubeconfig')], 2, /not valid YAML \(line \d+\).*\[BAD_USER_INPUT\]/],
      [['add', 'edge-2', '--kubeconfig', path.join(dir, 'missing.kubeconfig')], 2, /--kubeconfig: .*missing\.kubeconfig cannot be read \(ENOENT\)/],
      // A device never ends and a directory holds nothing (attack 14, F10): refused before any read.
      [['add', 'edge-2', '--kubeconfig', '/dev/zero'], 2, /--kubeconfig: \/dev\/zero is not a regular file/],
      [['add', 'edge-2', '--kubeconfig', dir], 2, /--kubeconfig: .* is not a regular file/],
      [['add', 'Not_A_Name', '--kubeconfig', path.join(dir, 'edge-1.kubeconfig')], 2, /DNS-1123|name/],
      [['add', 'local', '--kubeconfig', path.join(dir, 'edge-1.kubeconfig')], 1, /\[CONFLICT\]/],
      [['list', '--selector', 'env in (prod'], 2, /at position 12.*\[BAD_USER_INPUT\]/],
      [['label', 'edge-1', 'tier'], 2, /key=value to set and key- to remove/],
      [['remove', 'nope'], 1, /\[NOT_FOUND\]/],
      [['remove', 'local'], 1, /\[CONFLICT\]/],
      [['add', 'edge-2', '--kubeconfig', path.join(dir, 'edge-1.kubeconfig')], 3, /\[FORBIDDEN\]/, 'viewer'],
    ];
    for (const [args, code, message, as] of expectations) {
      const run = await cli(args, as === 'viewer' ? viewer : ADMIN);
      expect(run.code, args.join(' ')).toBe(code);
      expect(run.stderr, args.join(' ')).toMatch(message);
    }
    expect((await app.domain.clusters!.list()).map((c) => c.name)).toEqual(['local']);
    expect(readFileSync(path.join(path.dirname(app.databaseFile), 'member-clusters.yaml'), 'utf8')).toBe(file);
  });

  it('never prints the credentials', () => {
    expect(runs.length).toBeGreaterThan(10);
    for (const run of runs) expect(`${run.stdout}${run.stderr}`).not.toContain(PLANTED);
  });
});
