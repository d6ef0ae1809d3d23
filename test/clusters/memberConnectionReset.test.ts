import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterHealth } from '../../src/domain/clusters/model.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { MEMBER_FLEET_ENV } from '../helpers/memberFleet.js';
import { type MemberProxy, startMemberProxy } from '../helpers/memberProxy.js';
import { until } from '../helpers/until.js';

/**
 * A member whose connections are reset now and then (a kept-alive connection the server closed as a request went out:
 * its idle timeout, or its process paused) stays READY: the member request layer sends a safe request reset on a reused
 * connection once more, as Go's HTTP client does for an idempotent request (src/kube/resetRetry.ts, ADR 0073; the probe
 * itself no longer asks again; test/clusters/memberRequestLayer.test.ts for lists, dry runs, writes and watches). Found by the 300-cluster rollout bench: 35 members UNREACHABLE (ECONNRESET) at one instant
 * after their simulator's process paused, and the next bump refused for them. A member that resets every time is
 * still UNREACHABLE, saying so.
 */
describe('a member that resets a connection now and then', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member reset '));
  let fleet: SimulatedClusters;
  let proxy: MemberProxy;
  let app: TestApp;
  let versions = 0;
  let resetEvery = 2;
  const states: ClusterHealth['state'][] = [];
  /** Requests each connection to the proxy served. */
  const servedOn = new WeakMap<object, number>();

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: 'pools=1,nodes=1' }] });
    const member = fleet.clusters.get('edge-1')!;
    proxy = await startMemberProxy(member.url, {
      intercept: (req) => {
        const served = (servedOn.get(req.socket) ?? 0) + 1;
        servedOn.set(req.socket, served);
        if (req.url !== '/version') return false;
        // Every resetEvery-th /version: the connection is closed under the request, as a server's idle timeout does to
        // a kept-alive connection (one that served a request before; resetEvery 1: every request, fresh ones too).
        if (++versions % resetEvery !== 0 || (resetEvery > 1 && served === 1)) return false;
        req.socket.destroy();
        return true;
      },
    });
    const clusters = [{ name: 'edge-1', labels: { tier: 'edge' }, kubeconfig: member.kubeconfig.replaceAll(member.url, proxy.url) }];
    writeFileSync(path.join(dir, 'member-clusters.yaml'), stringify({ clusters }), { mode: 0o600 });
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1' } });
    app.memberClusters.connections.onHealth((name, health) => {
      if (name === 'edge-1') states.push(health.state);
    });
  });
  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stays READY through resets of every other /version request', async () => {
    await until('edge-1 READY', () => app.memberClusters.connections.get('edge-1')?.health().state === 'READY');
    const from = versions;
    states.length = 0;
    await until('ten more probes', () => versions - from >= 10, { timeoutMs: 60_000 });
    expect(states).not.toContain('UNREACHABLE');
    expect(app.memberClusters.connections.get('edge-1')!.health().state).toBe('READY');
  });

  it('is UNREACHABLE saying ECONNRESET when every request is reset', async () => {
    resetEvery = 1;
    await until('edge-1 UNREACHABLE', () => app.memberClusters.connections.get('edge-1')?.health().state === 'UNREACHABLE', { timeoutMs: 60_000 });
    expect(app.memberClusters.connections.get('edge-1')!.health().message).toBe('ECONNRESET');
    resetEvery = 2;
  });
});
