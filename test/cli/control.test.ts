import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './cliHarness.js';
import { scriptedAppPerFile } from './scriptedApp.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { type WaveStrategyRequest, waveStrategyInput } from '../../src/domain/waves/strategy.js';
import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { gql } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';

/** `rollplane rollout status | pause | resume | abort` against the real server, on rollouts the engine drives. */

const scripted = scriptedAppPerFile();
const { launch, env } = scripted;

describe('rollplane rollout status', () => {
  it('exits 1 for a rollout that does not exist', async () => {
    const run = await runCli(['rollout', 'status', 'ro_missing', '-o', 'json'], env());
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'NOT_FOUND' }, exitCode: 1 });
  });
});

describe('rollplane rollout pause | resume | abort', () => {
  it('pauses, resumes and aborts; status then exits 1', async () => {
    const { id } = await launch(2, { maxUnavailable: '1' });
    const paused = await runCli(['rollout', 'pause', id, '--reason', 'look at canary', '-o', 'json'], env());
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout).rollout).toMatchObject({ id, state: 'PAUSED', message: 'look at canary' });
    // The retry of a pause whose answer was lost meets a paused rollout: still success.
    const again = await runCli(['rollout', 'pause', id], env());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(`rollout ${id} is already PAUSED`);
    const resumed = await runCli(['rollout', 'resume', id], env());
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('PROGRESSING');
    const aborted = await runCli(['rollout', 'abort', id, '--reason', 'bad build'], env());
    expect(aborted.code).toBe(0);
    expect((await scripted.app.domain.rollouts.require(id)).state).toBe('ABORTED');
    const status = await runCli(['rollout', 'status', id], env());
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('bad build');
  });

  it('refuses to resume a rollout that has ended (CONFLICT, exit 1)', async () => {
    const { id } = await launch(1);
    await scripted.app.domain.rollouts.abort(id, 'stopped by the test');
    const run = await runCli(['rollout', 'resume', id], env());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('[CONFLICT]');
  });
});

/** A staged NODE_AGENT rollout over these nodes (each in its cluster), started by someone else than the CLI's caller. */
async function launchStaged(nodes: readonly { cluster: string; name: string }[], strategy: WaveStrategyRequest): Promise<string> {
  const result = await scripted.app.domain.launcher.launch({
    plan: {
      kind: 'NODE_AGENT',
      fromVersion: 'agent:1',
      toVersion: 'agent:2',
      selector: { namespace: 'kube-system', name: 'node-agent', canaryNodeSelector: null },
      strategy: { ...defaultStrategy(KIND_CONTRACTS.NODE_AGENT), maxUnavailable: '1' },
      targets: nodes.map(({ cluster, name }) => ({ cluster, namespace: '', name, fromVersion: 'agent:1', toVersion: 'agent:2' })),
    },
    cause: { actor: 'test' },
    request: { nodes, strategy },
    staged: {
      strategy: waveStrategyInput.parse(strategy)!,
      registered: [...new Set(nodes.map((n) => n.cluster))].map((name) => ({ name, labels: {} })),
      startedBy: 'someone-else',
    },
  });
  return result.rollout.id;
}

describe('rollplane rollout approve | reject', () => {
  it("approves a staged rollout's gate with a comment, then a late rejection is CONFLICT (exit 1)", async () => {
    const id = await launchStaged([{ cluster: 'local', name: 'gate-node-0' }], {
      waves: [{ name: 'only', clusters: { names: ['local'] }, before: { type: 'APPROVAL' } }],
    });
    await until('the gate opened', async () => (await scripted.app.domain.rollouts.runs.gates(id, new Date())).length === 1);
    const approved = await runCli(['rollout', 'approve', id, '--gate', 'before:only', '--comment', 'canary looks fine', '-o', 'json'], env());
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout).gate).toMatchObject({
      key: 'before:only',
      state: 'PASSED',
      decisions: [{ by: 'anonymous', role: 'admin', decision: 'APPROVE', comment: 'canary looks fine' }],
    });
    const rejected = await runCli(['rollout', 'reject', id, '--gate', 'before:only'], env());
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toContain('[CONFLICT]');
    const unknown = await runCli(['rollout', 'approve', id, '--gate', 'after:only'], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('[NOT_FOUND]');
  });
});

describe('rollplane rollout targets --wave', () => {
  it("lists one wave's targets (CLI and GraphQL); a wave the rollout does not have is BAD_USER_INPUT", async () => {
    // Held at the first wave's gate: nothing is admitted, the plan's targets stay where they are.
    const id = await launchStaged(
      [
        { cluster: 'local', name: 'wave-node-0' },
        { cluster: 'edge-w', name: 'wave-node-1' },
        { cluster: 'edge-w', name: 'wave-node-2' },
      ],
      {
        waves: [
          { name: 'first', clusters: { names: ['local'] }, before: { type: 'APPROVAL' } },
          { name: 'second', clusters: { names: ['edge-w'] } },
        ],
      },
    );
    const targetsOf = (wave: string, state?: string) =>
      gql(
        scripted.app.url,
        'query ($id: ID!, $wave: String, $state: TargetState) { rollout(id: $id) { targets(wave: $wave, state: $state) { totalCount edges { node { cluster name } } } } }',
        { id, wave, state },
      );
    const second = await targetsOf('second');
    expect(second.errors).toBeUndefined();
    expect(second.data.rollout.targets).toEqual({
      totalCount: 2,
      edges: [{ node: { cluster: 'edge-w', name: 'wave-node-1' } }, { node: { cluster: 'edge-w', name: 'wave-node-2' } }],
    });
    expect((await targetsOf('second', 'PENDING')).data.rollout.targets.totalCount).toBe(2);
    expect((await targetsOf('second', 'FAILED')).data.rollout.targets.totalCount).toBe(0);
    // By cluster too, alone or within a wave (issue 30: targets filtered by cluster).
    const inCluster = (cluster: string, wave?: string) =>
      gql(
        scripted.app.url,
        'query ($id: ID!, $wave: String, $cluster: String) { rollout(id: $id) { targets(wave: $wave, cluster: $cluster) { totalCount edges { node { cluster name } } } } }',
        { id, wave, cluster },
      );
    expect((await inCluster('edge-w')).data.rollout.targets.totalCount).toBe(2);
    expect((await inCluster('local')).data.rollout.targets).toEqual({ totalCount: 1, edges: [{ node: { cluster: 'local', name: 'wave-node-0' } }] });
    expect((await inCluster('edge-w', 'second')).data.rollout.targets.totalCount).toBe(2);
    expect((await inCluster('edge-w', 'first')).data.rollout.targets.totalCount).toBe(0);
    expect((await inCluster('x'.repeat(64))).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    // By version (issue 30: targets filtered by version): to or from it, with the other filters.
    const ofVersion = (version: string, wave?: string) =>
      gql(
        scripted.app.url,
        'query ($id: ID!, $wave: String, $version: String) { rollout(id: $id) { targets(wave: $wave, version: $version) { totalCount } } }',
        { id, wave, version },
      );
    expect((await ofVersion('agent:1')).data.rollout.targets.totalCount).toBe(3);
    expect((await ofVersion('agent:2', 'second')).data.rollout.targets.totalCount).toBe(2);
    expect((await ofVersion('agent:3')).data.rollout.targets.totalCount).toBe(0);
    expect((await ofVersion('x'.repeat(513))).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const byVersion = await runCli(['rollout', 'targets', id, '--of-version', 'agent:2', '--wave', 'first', '-o', 'json'], env());
    expect(byVersion.code, byVersion.stderr).toBe(0);
    expect(JSON.parse(byVersion.stdout)).toMatchObject({ totalCount: 1, targets: [{ name: 'wave-node-0' }] });
    const byCluster = await runCli(['rollout', 'targets', id, '--cluster', 'edge-w', '-o', 'json'], env());
    expect(byCluster.code, byCluster.stderr).toBe(0);
    expect(JSON.parse(byCluster.stdout)).toMatchObject({ totalCount: 2, targets: [{ name: 'wave-node-1' }, { name: 'wave-node-2' }] });
    const unknown = await targetsOf('third');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(unknown.errors?.[0]?.message).toMatch(/has no wave "third" \(its waves: first, second\)/);

    const cli = await runCli(['rollout', 'targets', id, '--wave', 'first', '-o', 'json'], env());
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ totalCount: 1, targets: [{ cluster: 'local', name: 'wave-node-0', state: 'PENDING' }] });
    const table = await runCli(['rollout', 'targets', id, '--wave', 'second', '--state', 'pending'], env());
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('2 targets of wave second in state PENDING');
    expect(table.stdout).toMatch(/edge-w\s+wave-node-1\s+PENDING\s+agent:2/);
    const bad = await runCli(['rollout', 'targets', id, '--wave', 'nope'], env());
    expect(bad.code).toBe(2); // the request's input was refused: a usage error
    expect(bad.stderr).toContain('[BAD_USER_INPUT]');
    await scripted.app.domain.rollouts.abort(id);

    // A rollout without waves has none to filter by.
    const { id: plain } = await launch(1, { maxUnavailable: '1' });
    const none = await gql(scripted.app.url, 'query ($id: ID!) { rollout(id: $id) { targets(wave: "first") { totalCount } } }', { id: plain });
    expect(none.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(none.errors?.[0]?.message).toMatch(/is not staged/);
  });
});

describe('rollplane history --wave', () => {
  it('lists the staged rollouts that have a wave of that name (CLI and GraphQL), newest first', async () => {
    const withProd = await launchStaged([{ cluster: 'local', name: 'hw-node-0' }], {
      waves: [{ name: 'prod', clusters: { names: ['local'] }, before: { type: 'APPROVAL' } }],
    });
    await scripted.app.domain.rollouts.abort(withProd);
    const withoutProd = await launchStaged([{ cluster: 'local', name: 'hw-node-1' }], {
      waves: [{ name: 'canary', clusters: { names: ['local'] }, before: { type: 'APPROVAL' } }],
    });
    await scripted.app.domain.rollouts.abort(withoutProd);
    const byWave = (wave: string) =>
      gql(scripted.app.url, 'query ($wave: String) { rollouts(first: 50, filter: { wave: $wave }) { totalCount edges { node { id } } } }', { wave });
    const prod = await byWave('prod');
    expect(prod.errors).toBeUndefined();
    expect(prod.data.rollouts.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(withProd);
    expect(prod.data.rollouts.edges.map((e: { node: { id: string } }) => e.node.id)).not.toContain(withoutProd);
    expect((await byWave('no-such-wave')).data.rollouts.totalCount).toBe(0);
    expect((await byWave('x'.repeat(64))).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const cli = await runCli(['history', '--wave', 'canary', '-o', 'json'], env());
    expect(cli.code, cli.stderr).toBe(0);
    const ids = JSON.parse(cli.stdout).rollouts.map((r: { id: string }) => r.id);
    expect(ids).toContain(withoutProd);
    expect(ids).not.toContain(withProd);
    const bad = await runCli(['history', '--wave', 'Not_A_Label'], env());
    expect(bad.code).toBe(2);
  });
});

describe('rollplane window list | create | update | delete', () => {
  it('creates a policy from a YAML file, lists it, refuses a bad one naming the field, updates and deletes it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-window-'));
    try {
      const file = path.join(dir, 'freeze.yaml');
      writeFileSync(
        file,
        'name: xmas\nkind: DENY\ntimeZone: Europe/Berlin\nclusterSelector: env=prod\nranges:\n  - from: 2026-12-24T00:00\n    to: 2026-12-27T00:00\n',
      );
      const created = await runCli(['window', 'create', '--file', file], env());
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toContain('created DENY window policy xmas');
      const listed = await runCli(['window', 'list'], env());
      expect(listed.stdout).toMatch(/xmas\s+DENY\s+Europe\/Berlin\s+env=prod\s+range 2026-12-24T00:00 → 2026-12-27T00:00/);
      writeFileSync(file, 'name: xmas\nkind: DENY\ntimeZone: Europe/Berlin\nweekly:\n  - days: [SAT]\n    start: "25:00"\n    end: "02:00"\n');
      const refused = await runCli(['window', 'update', '--file', file], env());
      expect(refused.code).toBe(2); // BAD_USER_INPUT: the input is wrong
      expect(refused.stderr).toContain('input.weekly[0].start');
      writeFileSync(file, 'name: xmas\nkind: DENY\nweekly:\n  - days: [SAT, SUN]\n    start: "22:00"\n    end: "02:00"\n');
      const updated = await runCli(['window', 'update', '--file', file, '-o', 'json'], env());
      expect(updated.code, updated.stderr).toBe(0);
      expect(JSON.parse(updated.stdout).maintenanceWindow.definition).toEqual({
        name: 'xmas',
        kind: 'DENY',
        timeZone: 'UTC',
        weekly: [{ days: ['SAT', 'SUN'], start: '22:00', end: '02:00' }],
      });
      const deleted = await runCli(['window', 'delete', 'xmas'], env());
      expect(deleted.code, deleted.stderr).toBe(0);
      expect((await runCli(['window', 'delete', 'xmas'], env())).stderr).toContain('[NOT_FOUND]');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
