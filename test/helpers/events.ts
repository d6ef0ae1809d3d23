/** Events for tests: whole payloads, checked against their type's schema like every writer's (ADR 0046). */
import type { EventPayload } from '../../src/domain/eventPayloads.js';
import type { EventType, NewEvent, NewEventOf } from '../../src/domain/events.js';

/** The least whole payload of each type: what a test that does not look at the payload appends. */
const LEAST: { [T in EventType]: EventPayload<T> } = {
  RolloutStateChanged: { from: 'PENDING', to: 'PROGRESSING' },
  TargetStateChanged: { from: 'PENDING', to: 'PROGRESSING', error: null },
  TargetFailed: { error: null },
  AgentRecreated: { pool: 'default/p', newImage: 'agent:v2' },
  AgentForceDeleted: { pool: 'default/p', pod: 'p-agent', podUid: null, node: 'n1', terminatingSeconds: 1, graceSeconds: 1 },
  UpstreamControllerChanged: { controller: 'harvester-system/vm-dhcp-controller', newImage: 'controller:v2', planned: true },
  ClusterUpgradeObserved: {
    cluster: 'default/vc',
    clusterVersion: 'cv',
    resourceVersion: '1',
    specVersion: '1',
    seconds: 1,
    outcome: 'SUCCEEDED',
    components: [],
    error: null,
  },
  NodeAgentReplaced: { node: 'n1', daemonSet: 'kube-system/agent', oldPod: null, newPod: null, oldImage: null, newImage: 'agent:v2' },
  WaveStarted: { waveName: 'canary', clusters: ['edge-1'] },
  WaveFinished: { waveName: 'canary', outcome: 'SUCCEEDED', reason: null },
  GateWaiting: { gateKey: 'before:prod', type: 'APPROVAL', reason: 'waiting' },
  GateApproved: { gateKey: 'before:prod', by: 't1', role: 'deployer', comment: null },
  GateRejected: { gateKey: 'before:prod', by: 't1', role: 'deployer', comment: null },
  GateEnded: { gateKey: 'before:prod', type: 'APPROVAL', state: 'PASSED', reason: 'approved' },
  WindowClosed: { waveName: 'prod', clusters: ['edge-1'], reason: 'frozen', until: null },
  WindowOpened: { waveName: 'prod', clusters: ['edge-1'] },
};

/** An event of `type` with the least whole payload, `fields` (and `payload` fields) over it. */
export function eventOf<T extends EventType>(
  type: T,
  fields: Omit<Partial<NewEventOf<T>>, 'type' | 'payload'> & { payload?: Partial<EventPayload<T>> } = {},
): NewEventOf<T> {
  const { payload, ...rest } = fields;
  return { type, ...rest, payload: { ...LEAST[type], ...payload } } as NewEventOf<T>;
}

/**
 * An event as an older rollplane or a hand-written row may hold: any JSON payload, or none; or one carrying a routing
 * field no writer sets yet (wave, gate, member cluster: eventPayloads.ts ROUTING_FIELDS). For the stores' tests, whose
 * contract is to keep whatever JSON they are given as it is, and for readers that must survive it; never a writer's.
 */
export function untypedEvent(event: {
  type: EventType;
  rolloutId?: string | null;
  kind?: NewEvent['kind'];
  namespace?: string | null;
  name?: string | null;
  cluster?: string | null;
  payload?: Record<string, unknown>;
}): NewEvent {
  return event as NewEvent;
}
