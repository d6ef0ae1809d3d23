import { describe, expect, it } from 'vitest';
import type { KindEvent } from '../../src/controllers/kindHost.js';
import { EVENT_PAYLOADS, readPayload } from '../../src/domain/eventPayloads.js';
import { EventType } from '../../src/domain/events.js';

describe('event payloads (ADR 0042)', () => {
  it('has a schema for every event type', () => {
    expect(Object.keys(EVENT_PAYLOADS).sort()).toEqual(Object.values(EventType).sort());
  });

  it('reads a stored payload as its type’s: matching fields kept, mismatching and unknown ones left out', () => {
    const stored = { pool: 'default/p', newImage: 'agent:2', oldImage: null, seconds: 'slow', extra: 1 };
    expect(readPayload(EventType.AgentRecreated, stored)).toEqual({ pool: 'default/p', newImage: 'agent:2', oldImage: null });
    expect(readPayload(EventType.RolloutStateChanged, { from: null, to: 'DONE' })).toEqual({ from: null });
    expect(readPayload(EventType.TargetFailed, 'not an object')).toEqual({});
  });

  it('checks what the kinds write at compile time', () => {
    const ok: KindEvent = { type: EventType.TargetFailed, payload: { error: null } };
    // @ts-expect-error a ClusterUpgradeObserved event needs its fields
    const missing: KindEvent = { type: EventType.ClusterUpgradeObserved, payload: { cluster: 'ns/vc' } };
    // @ts-expect-error a target state that does not exist
    const wrong: KindEvent = { type: EventType.TargetStateChanged, payload: { from: null, to: 'DONE', error: null } };
    expect([ok, missing, wrong].map((e) => e.type)).toEqual(['TargetFailed', 'ClusterUpgradeObserved', 'TargetStateChanged']);
  });
});
