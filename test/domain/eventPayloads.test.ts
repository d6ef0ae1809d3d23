import { describe, expect, it } from 'vitest';
import type { KindEvent } from '../../src/controllers/kindHost.js';
import { eventDefinition, readPayload, readRoutingFields, SHARED_EVENTS } from '../../src/domain/eventPayloads.js';
import type { EventLog } from '../../src/domain/EventLog.js';
import { EventType, type NewEvent } from '../../src/domain/events.js';
import type { InFlightChanges } from '../../src/domain/InFlightChanges.js';
import type { WithEvents } from '../../src/domain/historyPort.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

describe('event payloads (ADR 0042)', () => {
  it('has a schema for every event type: the shared ones in the domain, each other one in exactly one registered kind (ADR 0051)', () => {
    const kinds = ROLLOUT_KIND_MODULES.flatMap((module) => module.events.map((definition) => definition.type));
    expect([...Object.keys(SHARED_EVENTS), ...kinds].sort()).toEqual(Object.values(EventType).sort());
    for (const type of Object.values(EventType)) expect(eventDefinition(type)?.payload.shape).toBeDefined();
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

  it('checks every core writer’s event at compile time (ADR 0046): EventLog, InFlightChanges, the history port', () => {
    const ok: NewEvent = { type: EventType.RolloutStateChanged, rolloutId: 'ro_1', payload: { from: null, to: 'PENDING', toVersion: 'v2', targets: 1 } };
    // @ts-expect-error a key the type's schema does not have
    const wrongKey: NewEvent = { type: EventType.TargetStateChanged, payload: { from: null, to: 'FAILED', error: null, reason: 'x' } };
    // @ts-expect-error a missing field (TargetStateChanged's error)
    const missing: NewEvent = { type: EventType.TargetStateChanged, payload: { from: null, to: 'FAILED' } };
    // @ts-expect-error a payload of another type
    const crossed: NewEvent = { type: EventType.TargetFailed, payload: { from: null, to: 'FAILED', error: null } };
    // @ts-expect-error every event has its payload
    const none: NewEvent = { type: EventType.TargetFailed };
    const append = (log: EventLog) =>
      // @ts-expect-error EventLog.append takes only typed events
      log.append({ type: EventType.AgentRecreated, payload: { newImage: 'v2' } });
    const complete = (inFlight: InFlightChanges) =>
      // @ts-expect-error InFlightChanges.complete takes only typed events
      inFlight.complete('AGENT_POOL', 'ns', 'p', [{ type: EventType.TargetFailed, payload: { message: 'x' } }]);
    // @ts-expect-error a transaction's events (HistoryStore.transactionWithEvents) are typed too
    const committed: WithEvents<void> = { result: undefined, events: [{ type: EventType.RolloutStateChanged, payload: { to: 'DONE' } }] };
    expect([ok, wrongKey, missing, crossed, none].map((e) => e.type)).toHaveLength(5);
    expect([append, complete, committed]).toHaveLength(3);
  });

  it('reads routing fields through their schema, and not a field the type gives another meaning', () => {
    expect(readRoutingFields(EventType.RolloutStateChanged, { to: 'PAUSED', wave: 2, gate: 'soak', cluster: 'edge-1' })).toEqual({
      wave: '2',
      gate: 'soak',
      cluster: 'edge-1',
    });
    expect(readRoutingFields(EventType.RolloutStateChanged, { wave: '', gate: 3.5, cluster: { name: 'x' } })).toEqual({ gate: '3.5' });
    // ClusterUpgradeObserved's `cluster` is the VirtualCluster, not a member cluster.
    expect(readRoutingFields(EventType.ClusterUpgradeObserved, { cluster: 'tenants/vc-1' })).toEqual({});
  });
});
