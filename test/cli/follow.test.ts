import { describe, expect, it } from 'vitest';
import { GraphQLClient } from '../../src/cli/GraphQLClient.js';
import { LAST_EVENT_QUERY, ROLLOUT_QUERY, type RolloutView } from '../../src/cli/operations.js';
import { RolloutFollower } from '../../src/cli/RolloutFollower.js';
import { SubscriptionError } from '../../src/cli/subscriptionTransport.js';
import { runCli, startCli } from './cliHarness.js';
import { startFaultProxy } from './faultProxy.js';
import { scriptedAppPerFile } from './scriptedApp.js';
import { startTcpProxy } from './tcpProxy.js';
import { until } from '../helpers/until.js';

const scripted = scriptedAppPerFile();
const { launch, settle, env } = scripted;

describe('rollplane rollout status --wait', () => {
  it('follows a rollout to SUCCEEDED with a line per change, and exits 0', async () => {
    const { id, nodes } = await launch(3);
    const cli = startCli(['rollout', 'status', id, '--wait'], env());
    await until('the CLI to show the rollout progressing', () => cli.stderr().includes('in progress'), 20_000);
    for (const [i, node] of nodes.entries()) {
      settle(node, { phase: 'succeeded' });
      await until(`${i + 1}/3 succeeded`, () => cli.stderr().includes(`${i + 1}/3 succeeded`), 20_000);
    }
    const run = await cli.done;
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(new RegExp(`rollout ${id} SUCCEEDED 100% \\(3/3 succeeded, 0 failed\\)`));
    expect(run.stdout).toContain(`rollout ${id}  NODE_AGENT  SUCCEEDED`);
  });

  it('prints one JSON document with --output json', async () => {
    const { id, nodes } = await launch(2);
    const cli = startCli(['rollout', 'status', id, '--wait', '--output', 'json'], env());
    await until('progress', () => cli.stderr().includes('in progress'), 20_000);
    for (const node of nodes) settle(node, { phase: 'succeeded' });
    const run = await cli.done;
    expect(run.code).toBe(0);
    const document = JSON.parse(run.stdout) as { rollout: RolloutView };
    expect(document.rollout).toMatchObject({ id, state: 'SUCCEEDED', progress: { total: 2, succeeded: 2, failed: 0, percent: 100 } });
  });

  it('exits 1 when the rollout fails', async () => {
    const { id, nodes } = await launch(2);
    const cli = startCli(['rollout', 'status', id, '--wait'], env());
    await until('progress', () => cli.stderr().includes('in progress'), 20_000);
    settle(nodes[0]!, { phase: 'failed', reason: 'ImagePullBackOff' });
    const run = await cli.done;
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('FAILED');
    expect(run.stdout).toContain(`failed targets (1):\n    ${nodes[0]}: ImagePullBackOff`);
  });

  it('exits 2 when --timeout passes, leaving the rollout running', async () => {
    const { id } = await launch(1);
    const run = await runCli(['rollout', 'status', id, '--wait', '--timeout', '1s', '-o', 'json'], env());
    expect(run.code).toBe(2);
    const document = JSON.parse(run.stdout) as { error: { message: string }; exitCode: number; rollout: RolloutView };
    expect(document.exitCode).toBe(2);
    expect(document.error.message).toMatch(/timed out after 1s/);
    expect(['PENDING', 'PROGRESSING']).toContain(document.rollout.state);
    expect((await scripted.app.domain.rollouts.require(id)).state).toBe('PROGRESSING');
  });

  it('reconnects after the connection drops and still sees the end', async () => {
    const proxy = await startTcpProxy(Number(new URL(scripted.app.url).port));
    try {
      const { id, nodes } = await launch(2);
      const cli = startCli(['rollout', 'status', id, '--wait'], { ROLLPLANE_URL: `${proxy.url}/graphql` });
      await until('the socket', () => cli.stderr().includes('in progress') && proxy.received().includes('"type":"connection_ack"'), 20_000);
      const before = proxy.connections();
      proxy.dropAll();
      // While the CLI is cut off, one node finishes; the resumed subscription must replay it.
      settle(nodes[0]!, { phase: 'succeeded' });
      await until('the CLI to notice the drop', () => cli.stderr().includes('reconnecting'), 20_000).catch((error: Error) => {
        throw new Error(`${error.message}\n${cli.stderr()}`);
      });
      await until('the missed update', () => cli.stderr().includes('1/2 succeeded'), 20_000);
      settle(nodes[1]!, { phase: 'succeeded' });
      const run = await cli.done;
      expect(run.code).toBe(0);
      expect(proxy.connections()).toBeGreaterThan(before);
      expect(run.stderr).toContain(`rollout ${id} SUCCEEDED`);
    } finally {
      await proxy.close();
    }
  });

  it('keeps waiting through a server outage and sees the end once it is back', async () => {
    const proxy = await startTcpProxy(Number(new URL(scripted.app.url).port));
    try {
      const { id, nodes } = await launch(1);
      const cli = startCli(['rollout', 'status', id, '--wait', '--retries', '0'], { ROLLPLANE_URL: `${proxy.url}/graphql` });
      await until('the socket', () => cli.stderr().includes('in progress') && proxy.received().includes('"type":"connection_ack"'), 20_000);
      proxy.setDown(true);
      proxy.dropAll();
      await until('the CLI to notice the outage', () => cli.stderr().includes('still waiting'), 20_000);
      settle(nodes[0]!, { phase: 'succeeded' });
      proxy.setDown(false);
      const run = await cli.done;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('server reachable again');
      expect(run.stderr).toContain(`rollout ${id} SUCCEEDED`);
    } finally {
      await proxy.close();
    }
  });

  it('polls when WebSockets do not get through (an HTTP-only proxy)', async () => {
    const proxy = await startFaultProxy(scripted.app.url, () => ({ kind: 'forward' }));
    try {
      const { id, nodes } = await launch(1);
      const cli = startCli(['rollout', 'status', id, '--wait'], { ROLLPLANE_URL: proxy.url });
      await until('the fallback to polling', () => cli.stderr().includes('polling every'), 20_000);
      settle(nodes[0]!, { phase: 'succeeded' });
      const run = await cli.done;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`rollout ${id} SUCCEEDED`);
      expect(proxy.requests.filter((r) => r.query?.includes('rollout(id:')).length).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  });
});

describe('RolloutFollower', () => {
  it('falls back to polling when the socket keeps failing', async () => {
    const { id, nodes } = await launch(1);
    const client = new GraphQLClient({ url: scripted.app.url });
    const notices: string[] = [];
    const states: string[] = [];
    let attempts = 0;
    const follower = new RolloutFollower({
      fetchRollout: (rolloutId) => client.request(ROLLOUT_QUERY, { id: rolloutId }).then((d) => d.rollout),
      lastEventId: () => client.request(LAST_EVENT_QUERY).then((d) => d.serverInfo.lastEventId),
      subscribe: (_variables, sink) => {
        attempts++;
        setImmediate(() => sink.error(new SubscriptionError('transport', 'connect ECONNREFUSED')));
        return () => {};
      },
      onUpdate: (rollout) => states.push(rollout.state),
      onNotice: (message) => notices.push(message),
      pollIntervalMs: 50,
      reconnectDelayMs: 1,
    });
    const following = follower.follow(id, 20_000);
    following.catch(() => {}); // awaited below; keeps a failure before then from being unhandled
    await until('the fallback', () => notices.some((n) => n.includes('polling')), 10_000);
    settle(nodes[0]!, { phase: 'succeeded' });
    const final = await following;
    expect(final.state).toBe('SUCCEEDED');
    expect(attempts).toBe(2);
    expect(states.at(-1)).toBe('SUCCEEDED');
  });

  it('stops at once when the server refuses the token on the socket', async () => {
    const { id } = await launch(1);
    const client = new GraphQLClient({ url: scripted.app.url });
    const follower = new RolloutFollower({
      fetchRollout: (rolloutId) => client.request(ROLLOUT_QUERY, { id: rolloutId }).then((d) => d.rollout),
      lastEventId: async () => '0',
      subscribe: (_variables, sink) => {
        setImmediate(() => sink.error(new SubscriptionError('auth', 'subscription refused: 4401', 'UNAUTHENTICATED')));
        return () => {};
      },
      onUpdate: () => {},
    });
    await expect(follower.follow(id, 20_000)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});
