import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../helpers/memberFleet.js';
import { until } from '../helpers/until.js';

/**
 * A member that misses its probes keeps its caches for ROLLPLANE_MEMBER_CLUSTER_CACHE_GRACE_MS (src/clusters/
 * MemberRuntimes.ts): not driven meanwhile (no controllers, no reads), but back within the grace it needs no re-list.
 * Found by the 1,000-cluster rollout bench: on a loaded replica, missed probes dropped members' caches, and their
 * re-lists when the members answered made the next probes miss; the count of driven members went 0 → 675 → 0 for 14
 * minutes.
 */
const MEMBER = 'edge-1';

describe('a member that stops answering its probes', () => {
  let dir: string;
  let fleet: SimulatedClusters | undefined;
  let app: TestApp | undefined;

  afterEach(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(graceMs: number) {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member cache grace '));
    fleet = await startSimulatedClusters({ clusters: [{ name: MEMBER, fleet: 'pools=2,nodes=1' }] });
    registerMembers(dir, fleet, [MEMBER], () => ({ tier: 'edge' }));
    app = await startTestApp({
      databaseFile: path.join(dir, 'rollplane.db'),
      env: { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTER_CACHE_GRACE_MS: String(graceMs) },
    });
    const runtime = () => app!.memberRuntimes?.snapshot().find((r) => r.cluster === MEMBER);
    await until('the member driven by its own runtime', () => runtime()?.running && runtime()?.leading);
    return { runtime, connection: () => app!.memberClusters.connections.get(MEMBER)! };
  }

  it('keeps its caches, not driven, within the grace, and is driven on them again once it answers', async () => {
    const { runtime, connection } = await start(600_000);
    const pools = () => app!.memberRuntimes!.queriesOf(MEMBER);
    expect(pools()).toBeDefined();

    await fleet!.set(MEMBER, 'blackhole');
    await until('the member UNREACHABLE after a failed probe', () => connection().health().state === 'UNREACHABLE' && connection().snapshot().failures >= 1);
    // Neither driven nor read while it does not answer …
    await until('its controllers stopped', () => runtime()?.leading === false);
    expect(app!.memberRuntimes!.driverOf(MEMBER, 'AGENT_POOL')).toBeUndefined();
    expect(pools()).toBeUndefined();
    // … but its caches are kept: the same runtime, still synced.
    expect(runtime()).toMatchObject({ running: false, cachesKept: true, leading: false });

    await fleet!.set(MEMBER, 'ready');
    await until('driven again', () => connection().health().state === 'READY' && runtime()?.leading);
    expect(app!.memberRuntimes!.driverOf(MEMBER, 'AGENT_POOL')).toBeDefined();
  });

  it('drops its caches once the grace has passed', async () => {
    const { runtime, connection } = await start(1_500);
    await fleet!.set(MEMBER, 'blackhole');
    await until('the member UNREACHABLE', () => connection().health().state === 'UNREACHABLE');
    await until('its runtime gone', () => runtime() === undefined);
    expect(Date.now() - connection().health().since.getTime()).toBeGreaterThanOrEqual(1_500);

    await fleet!.set(MEMBER, 'ready');
    await until('a new runtime driving it', () => runtime()?.running && runtime()?.leading);
  });

  it('with a grace of 0 drops its caches at once, as before', async () => {
    const { runtime, connection } = await start(0);
    await fleet!.set(MEMBER, 'blackhole');
    await until('the member UNREACHABLE', () => connection().health().state === 'UNREACHABLE');
    expect(runtime()).toBeUndefined();
  });
});
