import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/rollplane.js';
import { EventType } from '../../src/domain/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';

/** `rollplane notify …` in process against the real server, its dispatcher sending to a local receiver. */
describe('rollplane notify', () => {
  let app: TestApp;
  let receiver: Receiver;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-notify-cli-'));
  beforeAll(async () => {
    receiver = await Receiver.start();
    app = await startTestApp({
      env: {
        ROLLPLANE_CONTROLLERS: 'on',
        ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8',
        ROLLPLANE_NOTIFY_MAX_ATTEMPTS: '1',
        ROLLPLANE_MUTATIONS_PER_MINUTE: '6000',
        ROLLPLANE_MUTATION_BURST: '1000',
      },
    });
    await until('the replica to lead', () => app.manager.isLeader());
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const run = async (...args: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(args, {
      env: { ROLLPLANE_URL: app.url },
      stdout: { write: (c: string) => (stdout += c) },
      stderr: { write: (c: string) => (stderr += c) },
    });
    return { code, stdout, stderr };
  };

  it('creates a subscription with a secret from a file, lists it, shows dead letters and replays them', async () => {
    const secretFile = path.join(dir, 'secret');
    writeFileSync(secretFile, 'cli-signing-secret-0123456789abcdefgh\n');
    receiver.on('/cli', (r) => (r.n === 0 ? { status: 503, body: 'down for maintenance' } : { status: 200 }));
    const created = await run(
      'notify',
      'create',
      'ci failures',
      '--webhook',
      receiver.url('/cli'),
      '--secret-file',
      secretFile,
      '--state',
      'failed',
      '--once-per',
      'rollout',
    );
    expect(created.stderr).toMatch(/^created notification subscription ns_\w+ \(ci failures, webhook http:\/\/127\.0\.0\.1:\d+\/cli\)\n$/);
    expect(created.stdout).toBe('');
    expect(created.code).toBe(0);
    const generated = await run('notify', 'create', 'everything', '--webhook', receiver.url('/all'), '-o', 'json');
    expect(JSON.parse(generated.stdout).signingSecret).toMatch(/^whsec_/);

    const [event] = await app.domain.events.append({
      type: EventType.RolloutStateChanged,
      rolloutId: 'ro_cli',
      kind: 'AGENT_POOL',
      payload: { from: 'PROGRESSING', to: 'FAILED' },
    });
    await until('the 503 to be dead-lettered (one attempt allowed)', async () =>
      (await run('notify', 'deliveries', '--state', 'dead_letter')).stdout.includes('DEAD_LETTER'),
    );
    receiver.verified('/cli', 'cli-signing-secret-0123456789abcdefgh');

    const list = await run('notify', 'list');
    expect(list.stdout).toMatch(/ci failures +webhook http:\/\/127\.0\.0\.1:\d+\/cli +0 +1 +- +HTTP 503: down for maintenance/);
    const dead = await run('notify', 'deliveries', '--state', 'DEAD_LETTER', '-o', 'json');
    const [delivery] = JSON.parse(dead.stdout).deliveries;
    expect(delivery).toMatchObject({ state: 'DEAD_LETTER', attempts: 1, lastStatusCode: 503, event: { id: String(event!.id) } });

    const replayed = await run('notify', 'replay', delivery.id);
    expect(replayed.stdout).toBe(`delivery ${delivery.id} is due again\n`);
    await until('the replay to arrive', () => receiver.at('/cli').some((r) => r.answer === 200));
    const range = await run(
      'notify',
      'replay',
      '--subscription',
      delivery.subscription.id,
      '--from',
      String(event!.id),
      '--to',
      String(event!.id),
      '--state',
      'delivered',
    );
    expect(range.stdout).toMatch(/^[01] deliveries are due again\n$/);

    const usage = await run('notify', 'create', 'both', '--webhook', receiver.url('/x'), '--slack', receiver.url('/y'));
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('give one of --webhook <url> and --slack <url>');
    const refused = await run('notify', 'create', 'metadata', '--webhook', 'http://169.254.169.254/');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not a public address');
    expect(refused.stderr).toContain('[BAD_USER_INPUT]');

    const deleted = await run('notify', 'delete', delivery.subscription.id);
    expect(deleted.stdout).toBe(`deleted notification subscription ${delivery.subscription.id}\n`);
    expect((await run('notify', 'list')).stdout).not.toContain('ci failures');
  });

  it('selects clusters by name and label selector; a bad selector is a usage error that sends nothing', async () => {
    const created = await run(
      'notify',
      'create',
      'edge',
      '--webhook',
      receiver.url('/edge'),
      '--cluster',
      'edge-1',
      '--cluster-selector',
      'tier=edge',
      '-o',
      'json',
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).subscription.filter).toMatchObject({ clusters: ['edge-1'], clusterSelector: 'tier=edge' });
    const bad = await run('notify', 'create', 'edge', '--webhook', receiver.url('/edge'), '--cluster-selector', 'tier in ()');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a label selector/);
    await run('notify', 'delete', JSON.parse(created.stdout).subscription.id);
  });
});
