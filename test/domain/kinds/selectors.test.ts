import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { describe, expect, it } from 'vitest';
import { defaultStrategy, parseStoredSelector } from '../../../src/domain/kinds/index.js';
import { nodeAgentSelectorOf } from '../../../src/kinds/nodeAgent/plan.js';

describe('stored selectors, per kind (ADR 0042)', () => {
  it('read each kind’s selection, and a rollback’s reference to the rollout it reverts', () => {
    expect(parseStoredSelector(KIND_CONTRACTS.AGENT_POOL, { namespaces: ['default'], labelSelector: 'env=prod' })).toEqual({
      namespaces: ['default'],
      labelSelector: 'env=prod',
    });
    expect(parseStoredSelector(KIND_CONTRACTS.NODE_AGENT, { namespace: 'kube-system', name: 'agent', canaryNodeSelector: null })).toEqual({
      namespace: 'kube-system',
      name: 'agent',
      canaryNodeSelector: null,
    });
    expect(parseStoredSelector(KIND_CONTRACTS.VIRTUAL_CLUSTER, { clusterVersion: 'cv-1', clusters: null })).toEqual({ clusterVersion: 'cv-1', clusters: null });
    expect(parseStoredSelector(KIND_CONTRACTS.VIRTUAL_CLUSTER, { rollbackOf: 'ro_1' })).toEqual({ rollbackOf: 'ro_1' });
  });

  it('read what is not theirs as nothing rather than by key', () => {
    expect(parseStoredSelector(KIND_CONTRACTS.NODE_AGENT, 'not an object')).toBeUndefined();
    expect(parseStoredSelector(KIND_CONTRACTS.AGENT_POOL, { names: 'p' })).toEqual({});
  });

  it('give a node-agent rollback the DaemonSet its copied strategy names', () => {
    const strategy = { ...defaultStrategy(KIND_CONTRACTS.NODE_AGENT), daemonSetNamespace: 'kube-system', daemonSetName: 'agent' };
    expect(nodeAgentSelectorOf({ selector: { rollbackOf: 'ro_1' }, strategy })).toEqual({ namespace: 'kube-system', name: 'agent', canaryNodeSelector: null });
    expect(nodeAgentSelectorOf({ selector: { namespace: 'ns', name: 'ds', canaryNodeSelector: 'zone=a' }, strategy })).toEqual({
      namespace: 'ns',
      name: 'ds',
      canaryNodeSelector: 'zone=a',
    });
  });
});
