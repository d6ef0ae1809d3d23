import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { peerGate, startFailure } from '../../../../src/kinds/nodeAgent/controller/podFacts.js';

const T0 = Date.parse('2026-01-01T00:00:10.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

function agent(startedMs: number, containersReady = true): V1Pod {
  return {
    metadata: { name: 'agent' },
    spec: { containers: [{ name: 'a', image: 'x:1' }] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'ContainersReady', status: containersReady ? 'True' : 'False', lastTransitionTime: new Date(at(startedMs)) }],
      containerStatuses: [
        { name: 'a', image: 'x:1', imageID: '', ready: containersReady, restartCount: 0, state: { running: { startedAt: new Date(at(startedMs)) } } },
      ],
    },
  };
}

function peer(name: string, ready: boolean, transitionMs: number, runtimeClassName = 'kata-remote'): V1Pod {
  return {
    metadata: { name },
    spec: { runtimeClassName, containers: [{ name: 'c', image: 'nginx' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date(at(transitionMs)) }] },
  };
}

describe('peerGate', () => {
  it('opens when every peer pod turned Ready at or after the agent started', () => {
    const gate = peerGate(agent(0), [peer('a', true, 0), peer('b', true, 500)], 'kata-remote');
    expect(gate).toEqual({ open: true, peers: 2, back: 2, waiting: [] });
  });

  it('stays closed for a peer pod that has been Ready since before the agent started (not restarted)', () => {
    const gate = peerGate(agent(1000), [peer('restarted', true, 1500), peer('stale', true, 200)], 'kata-remote');
    expect(gate.open).toBe(false);
    expect(gate.waiting).toEqual(['stale']);
  });

  it('stays closed while a peer pod is not Ready, and while the agent containers are not ready', () => {
    expect(peerGate(agent(0), [peer('down', false, 100)], 'kata-remote').open).toBe(false);
    expect(peerGate(agent(0, false), [], 'kata-remote').open).toBe(false);
  });

  it('ignores pods of other runtime classes and opens with no peer pods at all', () => {
    expect(peerGate(agent(1000), [peer('runc', true, 0, 'runc')], 'kata-remote')).toEqual({ open: true, peers: 0, back: 0, waiting: [] });
  });
});

describe('startFailure', () => {
  it('names image pull and crash-loop failures, and nothing for a starting container', () => {
    const pod = (reason: string): V1Pod => ({
      status: {
        containerStatuses: [{ name: 'a', image: 'x:bad', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message: 'nope' } } }],
      },
    });
    expect(startFailure(pod('ImagePullBackOff'))).toBe('ImagePullBackOff: nope');
    expect(startFailure(pod('CrashLoopBackOff'))).toBe('CrashLoopBackOff: nope');
    expect(startFailure(pod('ContainerCreating'))).toBeUndefined();
  });
});
