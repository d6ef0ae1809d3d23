import { describe, expect, it } from 'vitest';
import type { RolloutEvent } from '../../src/cli/operations.js';
import { TargetTracker } from '../../src/cli/targetTracker.js';

let nextId = 1;
const event = (name: string, to: string, error?: string, type = 'TargetStateChanged'): RolloutEvent =>
  ({ id: String(nextId++), type, object: { namespace: 'default', name }, payload: { from: 'PENDING', to, error: error ?? null } }) as RolloutEvent;

describe('TargetTracker', () => {
  it("reads each target's changes from the rollout's events: in flight, failed with its error, ended", () => {
    const tracker = new TargetTracker();
    expect(tracker.observe(event('net-1', 'PROGRESSING'))).toEqual({ target: 'default/net-1', state: 'PROGRESSING' });
    tracker.observe(event('net-2', 'PROGRESSING'));
    expect(tracker.inFlightNow()).toEqual(['default/net-1', 'default/net-2']);
    expect(tracker.observe(event('net-1', 'FAILED', 'ImagePullBackOff'))).toEqual({ target: 'default/net-1', state: 'FAILED', error: 'ImagePullBackOff' });
    expect(tracker.observe(event('net-2', 'SUCCEEDED'))).toEqual({ target: 'default/net-2', state: 'SUCCEEDED' });
    expect(tracker.inFlightNow()).toEqual([]);
    expect(tracker.failures()).toEqual([{ target: 'default/net-1', state: 'FAILED', error: 'ImagePullBackOff' }]);
    // Rolled back and retried: no longer a failure.
    tracker.observe(event('net-1', 'PROGRESSING'));
    expect(tracker.failures()).toEqual([]);
  });

  it('ignores the events that are not about a target', () => {
    const tracker = new TargetTracker();
    expect(tracker.observe(event('net-1', 'PROGRESSING', undefined, 'RolloutStateChanged'))).toBeUndefined();
    expect(tracker.observe({ id: '9', type: 'TargetStateChanged', object: null, payload: {} } as RolloutEvent)).toBeUndefined();
    // Read through the payload's schema (ADR 0046): a `to` that is no target state is no change.
    expect(tracker.observe(event('net-1', 'DONE'))).toBeUndefined();
    expect(tracker.inFlightNow()).toEqual([]);
  });

  it('starts from the targets in flight when following began, and does not repeat their own events', () => {
    const tracker = new TargetTracker();
    expect(tracker.seed([{ namespace: 'default', name: 'net-1' }])).toEqual([{ target: 'default/net-1', state: 'PROGRESSING' }]);
    expect(tracker.observe(event('net-1', 'PROGRESSING'))).toBeUndefined();
    expect(tracker.observe(event('net-1', 'SUCCEEDED'))).toEqual({ target: 'default/net-1', state: 'SUCCEEDED' });
  });

  it('tells the same pool in two member clusters apart, naming the cluster outside local', () => {
    const tracker = new TargetTracker();
    const inCluster = (cluster: string, to: string) => ({ ...event('net-1', to), cluster }) as RolloutEvent;
    expect(tracker.seed([{ cluster: 'local', namespace: 'default', name: 'net-1' }])).toEqual([{ target: 'default/net-1', state: 'PROGRESSING' }]);
    expect(tracker.observe(inCluster('edge-1', 'PROGRESSING'))).toEqual({ target: 'edge-1:default/net-1', state: 'PROGRESSING' });
    expect(tracker.observe(inCluster('edge-2', 'PROGRESSING'))).toEqual({ target: 'edge-2:default/net-1', state: 'PROGRESSING' });
    tracker.observe(inCluster('edge-1', 'SUCCEEDED'));
    expect(tracker.inFlightNow()).toEqual(['default/net-1', 'edge-2:default/net-1']);
  });
});
