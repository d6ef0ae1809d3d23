import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { MemberConnection } from '../../src/clusters/MemberConnection.js';
import { MemberRuntimes, type MemberRuntimesOptions } from '../../src/clusters/MemberRuntimes.js';
import type { ClusterHealth } from '../../src/domain/clusters/model.js';
import { until } from '../helpers/until.js';

/**
 * ADR 0066 (attack 15, F5), the shard holder's side: a member that does not answer, in a shard this replica holds, with
 * an active rollout's targets in it, is told that work waits (so its connection probes it again soon) at every resync —
 * also where the engine (which tells it on its own replica) runs elsewhere. A member without such a rollout, one that
 * answers, or one whose shard another replica holds is not.
 */
describe('MemberRuntimes tells a member nobody can drive now that work waits on it', () => {
  let runtimes: MemberRuntimes | undefined;
  afterEach(async () => {
    await runtimes?.close();
  });

  function connection(name: string, state: ClusterHealth['state'], waited: string[]): MemberConnection {
    const health: ClusterHealth = { state, since: new Date(), message: null, serverVersion: null, kinds: ['AGENT_POOL'] };
    return { name, health: () => health, workWaiting: () => waited.push(name), kindIssues: () => new Map() } as unknown as MemberConnection;
  }

  it('at each resync, for the members it would drive that do not answer while an active rollout has targets there', async () => {
    const waited: string[] = [];
    const members = new Map([
      ['edge-1', connection('edge-1', 'UNREACHABLE', waited)],
      ['edge-2', connection('edge-2', 'UNREACHABLE', waited)],
      ['edge-3', connection('edge-3', 'UNAUTHORIZED', waited)],
      ['other-shard', connection('other-shard', 'UNREACHABLE', waited)],
    ]);
    const active: Record<string, string[]> = { 'edge-1': ['ro-1'], 'edge-3': ['ro-1'], 'other-shard': ['ro-1'] };
    const asked: string[] = [];
    runtimes = new MemberRuntimes({
      connections: {
        get: (name: string) => members.get(name),
        snapshots: () => [...members.keys()].map((name) => ({ name })),
        onHealth: () => () => {},
      },
      rollouts: {
        activeRolloutIdsInCluster: async (name: string) => {
          asked.push(name);
          return active[name] ?? [];
        },
      },
      modules: [],
      logger: pino({ level: 'silent' }),
      resyncMs: 20,
    } as unknown as MemberRuntimesOptions);
    runtimes.useShards({ shardOf: (name) => (name === 'other-shard' ? 1 : 0), holds: (shard) => shard === 0, holdsFreshly: (shard) => shard === 0 });
    runtimes.start();
    await until('two resyncs told edge-1 and edge-3', () => waited.filter((n) => n === 'edge-1').length >= 2 && waited.includes('edge-3'));
    // edge-2 has no active rollout; other-shard is another replica's to drive: neither is told (nor asked about).
    expect(new Set(waited)).toEqual(new Set(['edge-1', 'edge-3']));
    expect(asked).not.toContain('other-shard');
  });
});
