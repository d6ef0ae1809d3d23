import { describe, expect, it } from 'vitest';
import { PREFLIGHT_CONCURRENCY, type PreflightProgress, preflightAcrossClusters } from '../../src/domain/clusterPreflight.js';
import type { ClusterPorts } from '../../src/domain/clusterSelection.js';
import { ConflictError, UnavailableError } from '../../src/errors.js';
import { bumpAgentImageInput } from '../../src/kinds/agentPool/contract.js';
import { type AgentPoolQueries, type AgentPoolView, bumpAgentImage } from '../../src/kinds/agentPool/plan.js';

/**
 * A bump's preflight over many member clusters (issue 29: over 1,000 members it ran one cluster after another for 67 s,
 * and one reset refused the bump naming one member): asked a bounded number at once, every cluster asked, and the
 * refusal names every cluster that refused.
 */
describe('preflightAcrossClusters', () => {
  const clusters = Array.from({ length: 100 }, (_, i) => ({ cluster: `edge-${String(i).padStart(3, '0')}` }));

  it('asks every cluster, at most the bound at once, and passes when none refuses', async () => {
    let inFlight = 0;
    let most = 0;
    const asked: string[] = [];
    await preflightAcrossClusters(
      clusters,
      async ({ cluster }) => {
        most = Math.max(most, ++inFlight);
        await new Promise(setImmediate);
        asked.push(cluster);
        inFlight--;
      },
      { concurrency: 8 },
    );
    expect(most).toBe(8);
    expect(asked.sort()).toEqual(clusters.map((c) => c.cluster));
  });

  it('throws one refusal as it is, and several as the first naming every other refusing cluster', async () => {
    const one = new UnavailableError('in member cluster edge-001: socket hang up', { details: { cluster: 'edge-001' } });
    await expect(preflightAcrossClusters(clusters, async ({ cluster }) => (cluster === 'edge-001' ? Promise.reject(one) : undefined))).rejects.toBe(one);

    const refusing = new Set(['edge-003', 'edge-050', 'edge-099']);
    let asked = 0;
    const error = await preflightAcrossClusters(clusters, async ({ cluster }) => {
      asked++;
      if (refusing.has(cluster)) throw new ConflictError(`in member cluster ${cluster}: denied by the webhook`, { details: { cluster } });
    }).catch((e: unknown) => e);
    expect(asked).toBe(100);
    expect(error).toMatchObject({
      code: 'CONFLICT',
      message: 'in member cluster edge-003: denied by the webhook (refused in 2 more cluster(s) too: edge-050, edge-099)',
      details: { cluster: 'edge-003', clusters: ['edge-003', 'edge-050', 'edge-099'] },
    });
  });

  it('says how far a long preflight got', async () => {
    const heard: PreflightProgress[] = [];
    let release: () => void = () => {};
    const heardOnce = new Promise<void>((resolve) => (release = resolve));
    await preflightAcrossClusters(
      clusters.slice(0, 3),
      async ({ cluster }) => {
        // The last cluster answers only once a progress line was heard.
        if (cluster === 'edge-002') await heardOnce;
      },
      {
        concurrency: 1,
        progressEveryMs: 5,
        onProgress: (p) => {
          heard.push(p);
          release();
        },
      },
    );
    expect(heard[0]).toMatchObject({ checked: 2, total: 3, refused: 0 });
  });
});

describe('bumpAgentImage over many member clusters', () => {
  const members = Array.from({ length: 3 * PREFLIGHT_CONCURRENCY }, (_, i) => `edge-${String(i).padStart(3, '0')}`);
  const pool = (cluster: string): AgentPoolView =>
    ({
      cluster,
      namespace: 'default',
      name: 'net-1',
      labels: {},
      networkName: 'net',
      cidr: null,
      paused: false,
      held: false,
      heldByRollplane: false,
      mode: 'DIRECT',
      desiredImage: 'agent:v1.0.0',
      desiredBy: null,
      recordedImage: 'agent:v1.0.0',
      runningImage: 'agent:v1.0.0',
    }) as AgentPoolView;

  it('preflights the clusters together and refuses naming every member whose dry run failed, launching nothing', async () => {
    let inFlight = 0;
    let most = 0;
    const asked = new Set<string>();
    const queries = (cluster: string): AgentPoolQueries => ({
      all: async () => [pool(cluster)],
      get: async () => pool(cluster),
      checkRollout: async () => 'DIRECT',
      preflight: async () => {
        most = Math.max(most, ++inFlight);
        await new Promise(setImmediate);
        inFlight--;
        asked.add(cluster);
        if (cluster === 'edge-007' || cluster === 'edge-040')
          throw new UnavailableError('the agent of ippool default/net-1 could not be created: socket hang up');
      },
    });
    const clusterPorts: ClusterPorts = {
      registered: async () => members.map((name) => ({ name, labels: { tier: 'edge' } })),
      portsOf: (cluster) => ({ ports: { agentPools: queries(cluster) } as never }),
    };
    const launcher = {
      launch: async () => {
        throw new Error('launched');
      },
    };
    const input = bumpAgentImageInput.parse({ image: 'agent:v1.1.0', memberClusters: { labelSelector: 'tier=edge' } });
    const error = await bumpAgentImage({ clusterPorts, launcher } as never, input, 'test').catch((e: unknown) => e);
    expect(asked.size).toBe(members.length);
    expect(most).toBe(PREFLIGHT_CONCURRENCY);
    expect(error).toMatchObject({
      code: 'UNAVAILABLE',
      message:
        'in member cluster edge-007: the agent of ippool default/net-1 could not be created: socket hang up (refused in 1 more cluster(s) too: edge-040)',
      details: { cluster: 'edge-007', clusters: ['edge-007', 'edge-040'] },
    });
  });
});
