import { describe, expect, it } from 'vitest';
import { bumpNodeAgentImageInput, type BumpNodeAgentImageInput } from '../../../src/kinds/nodeAgent/contract.js';
import { parseInput } from '../../../src/domain/kinds/strategy.js';
import { matchesLabelSelector, parseLabelSelector } from '../../../src/domain/labelSelector.js';
import {
  DELETES_FIRST,
  nodeAgentSelectorOf,
  planNodeAgentBump,
  type NodeAgentCandidate,
  type NodeAgentCandidates,
  type NodeAgentQueries,
} from '../../../src/kinds/nodeAgent/plan.js';

const OLD = 'example.com/agent:v1';
/** The planner takes input the node-agent contract validated (the resolver parses it at the API edge). */
const request = (input: BumpNodeAgentImageInput) => parseInput(bumpNodeAgentImageInput, input);
const NEW = 'example.com/agent:v2';

/** The planner's view of a cluster, as the Kubernetes side's query port would answer it. */
function clusterWith(candidates: Partial<NodeAgentCandidates> & { nodes: NodeAgentCandidates['nodes'] }): NodeAgentQueries {
  const full: NodeAgentCandidates = {
    set: {
      namespace: 'ns',
      name: 'agent',
      peerRuntimeClass: 'kata-remote',
      desiredImage: OLD,
      updateStrategy: { type: 'OnDelete' },
      nodes: [],
      drivenBy: null,
      savedUpdateStrategy: null,
    },
    selectorHasMatchLabels: true,
    usesHostPorts: false,
    annotatedPeerRuntimeClass: null,
    ...candidates,
  };
  return {
    listSets: () => [full.set],
    getSet: () => full.set,
    candidates: (namespace, name) => (namespace === 'ns' && name === 'agent' ? full : undefined),
    driftItems: async () => [],
  };
}

const nodes: NodeAgentCandidate[] = [
  { node: 'n-b', labels: { zone: 'a' }, image: OLD },
  { node: 'n-a', labels: { zone: 'b', canary: 'true' }, image: OLD },
  { node: 'n-c', labels: { zone: 'a' }, image: NEW },
];

describe('planNodeAgentBump', () => {
  it('orders canary nodes first, then by name, skips nodes already on the image, one node at a time', () => {
    const plan = planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, canaryNodeSelector: 'canary=true' }), clusterWith({ nodes }));
    // An OnDelete set: NODE_BY_NODE, and the plan says it deletes each agent first (issue 27).
    expect(plan.targets).toEqual([
      { namespace: '', name: 'n-a', fromVersion: OLD, toVersion: NEW, note: DELETES_FIRST },
      { namespace: '', name: 'n-b', fromVersion: OLD, toVersion: NEW, note: DELETES_FIRST },
      { namespace: '', name: 'n-c', fromVersion: NEW, toVersion: NEW, skipReason: `already runs ${NEW}` },
    ]);
    expect(plan.fromVersion).toBe(OLD);
    expect(plan.strategy).toMatchObject({
      maxUnavailable: '1',
      maxConcurrent: 1,
      mode: 'NODE_BY_NODE',
      progressDeadlineSeconds: 600,
      minReadySeconds: 0,
      failureThreshold: 1,
      canaryNodes: 1,
    });
    // A rollback copies the strategy, not the selector: the DaemonSet is found from either.
    expect(nodeAgentSelectorOf({ selector: { rollbackOf: 'ro_x' }, strategy: plan.strategy })).toMatchObject({ namespace: 'ns', name: 'agent' });
  });

  it("defaults to the chart's own way: SURGE for a set that updates by surge, a node deadline covering its startup budget", () => {
    const chart = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
    const set = { ...clusterWith({ nodes }).getSet('ns', 'agent')!, updateStrategy: chart };
    // The cloud-api-adaptor chart: startupProbe initialDelaySeconds 20, periodSeconds 20, failureThreshold 30 → 620 s.
    const surge = planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes, set, startupBudgetSeconds: 620 }));
    expect(surge.strategy).toMatchObject({ mode: 'SURGE', progressDeadlineSeconds: 740 });
    expect(surge.targets.filter((t) => !t.skipReason).every((t) => t.note === undefined)).toBe(true);
    // While a rollout drives it the set is OnDelete: the strategy it saved decides.
    const driven = { ...set, updateStrategy: { type: 'OnDelete' }, savedUpdateStrategy: chart };
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes, set: driven })).strategy.mode).toBe('SURGE');
    // SURGE impossible (a hostPort, no matchLabels) or a set that does not surge itself: NODE_BY_NODE; explicit input wins.
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes, set, usesHostPorts: true })).strategy.mode).toBe(
      'NODE_BY_NODE',
    );
    const unavailable = { ...set, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } };
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes, set: unavailable })).strategy.mode).toBe(
      'NODE_BY_NODE',
    );
    const explicit = planNodeAgentBump(
      request({ namespace: 'ns', name: 'agent', image: NEW, mode: 'NODE_BY_NODE', nodeDeadlineSeconds: 300 }),
      clusterWith({ nodes, set }),
    );
    expect(explicit.strategy).toMatchObject({ mode: 'NODE_BY_NODE', progressDeadlineSeconds: 300 });
  });

  it('names the offending field', () => {
    const q = clusterWith({ nodes });
    const field = (input: Record<string, unknown>) => {
      try {
        planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, ...input }), q);
        return undefined;
      } catch (error) {
        return (error as { details?: { field?: string } }).details?.field ?? (error as Error).name;
      }
    };
    expect(field({ image: 'UPPER/case' })).toBe('input.image');
    expect(field({ nodeDeadlineSeconds: 0 })).toBe('input.nodeDeadlineSeconds');
    expect(field({ minReadySeconds: -1 })).toBe('input.minReadySeconds');
    expect(field({ failureThreshold: 0 })).toBe('input.failureThreshold');
    expect(field({ canaryNodeSelector: 'a in (b' })).toBe('input.canaryNodeSelector');
    expect(field({ mode: 'SIDEWAYS' })).toBe('input.mode');
    expect(field({ name: 'missing' })).toBe('NotFoundError');
    expect(field({ mode: 'SURGE' })).toBeUndefined();
  });

  it('refuses SURGE where two agents cannot share a node or the old one cannot leave the set', () => {
    const mode = 'SURGE' as const;
    expect(() => planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, mode }), clusterWith({ nodes, usesHostPorts: true }))).toThrow(
      /hostPort/,
    );
    expect(() =>
      planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, mode }), clusterWith({ nodes, selectorHasMatchLabels: false })),
    ).toThrow(/matchLabels/);
  });

  it('takes the peer runtime class from the input, else the DaemonSet annotation, else kata-remote; mixed versions have no fromVersion', () => {
    const mixed = [...nodes, { node: 'n-d', labels: {}, image: 'example.com/agent:v0' }];
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes: mixed })).fromVersion).toBeNull();
    const annotated = clusterWith({ nodes, annotatedPeerRuntimeClass: 'kata-qemu' });
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), annotated).strategy.peerRuntimeClass).toBe('kata-qemu');
    expect(
      planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, peerRuntimeClass: 'kata-remote' }), annotated).strategy.peerRuntimeClass,
    ).toBe('kata-qemu');
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, peerRuntimeClass: 'kata-fc' }), annotated).strategy.peerRuntimeClass).toBe(
      'kata-fc',
    );
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes })).strategy.peerRuntimeClass).toBe('kata-remote');
  });
});

describe('label selectors', () => {
  it('supports equality, inequality, set membership and existence', () => {
    const labels = { zone: 'a', tier: 'canary', gpu: '' };
    const m = (s: string) => matchesLabelSelector(parseLabelSelector(s, 'f'), labels);
    expect(m('zone=a')).toBe(true);
    expect(m('zone==b')).toBe(false);
    expect(m('zone!=b,tier in (canary, early)')).toBe(true);
    expect(m('tier notin (canary)')).toBe(false);
    expect(m('gpu,!spot')).toBe(true);
    expect(m('spot')).toBe(false);
    expect(m('example.com/role=x')).toBe(false);
    expect(() => parseLabelSelector('a=b,,c', 'f')).toThrow(/empty requirement/);
    expect(() => parseLabelSelector('-bad=x', 'f')).toThrow(/label key/);
  });
});

describe('a node-agent bump with an analysis between its nodes (ADR 0071)', () => {
  const analysis = { after: [1], config: { template: 'checked at launch' } };

  it('keeps it in the strategy as the other kinds do, and refuses a malformed one naming input.analysis', () => {
    const plan = planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW, analysis }), clusterWith({ nodes }));
    expect(plan.strategy.analysis).toEqual(analysis);
    expect(planNodeAgentBump(request({ namespace: 'ns', name: 'agent', image: NEW }), clusterWith({ nodes })).strategy).not.toHaveProperty('analysis');
    expect(() => request({ namespace: 'ns', name: 'agent', image: NEW, analysis: { config: {} } })).toThrow(/^input\.analysis: needs `every` or `after`/);
    expect(() => request({ namespace: 'ns', name: 'agent', image: NEW, analysis: { every: 1, config: 'x' } as never })).toThrow(
      /^input\.analysis\.config: must be an ANALYSIS gate config/,
    );
  });
});
