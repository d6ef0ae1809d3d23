/**
 * Beside the vm-dhcp-controller, upstream replaces an agent and writes the pool; rollplane records the replacement
 * after that. The driver's observation waits for the record (its intent to go), so the engine must hear of the target
 * once it is recorded: no watch event comes after it, and a large rollout would otherwise see the target succeed only
 * at its next full observation (the 2.5 s wait of the 1,000-pool coexistence benchmark, issue 35).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_NS, startHarness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('agent pools beside the vm-dhcp-controller: the engine hears of a recorded recreation', () => {
  it('notifies the pool once its AgentRecreated is recorded and its intent gone', async () => {
    h = await startHarness({ fleet: 'pools=1,nodes=1,upstream=vm-dhcp', agent: { notifyIntervalMs: 1 } });
    const harness = h;
    const notes = harness.manager.inFlight.of('AGENT_POOL');
    // Each notification of net-1: when, and whether a recreation of it was still in flight then.
    const seen: { at: number; inFlight: boolean }[] = [];
    harness.manager.onTargetChanged((kind, namespace, name) => {
      if (kind === 'AGENT_POOL' && namespace === 'default' && name === 'net-1') seen.push({ at: Date.now(), inFlight: !!notes.get('default', 'net-1') });
    });
    const pods = harness.sim.store.resourceType('', 'pods')!;
    const ready = (pod: { status?: { conditions?: { type: string; status: string }[] } } | undefined) =>
      !!pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const agent = await harness.waitFor('the agent of net-1 Ready', () => {
      const ref = harness.pool('net-1')?.status?.agentPodRef;
      const pod = ref?.name ? harness.pod(ref.name) : undefined;
      return pod?.metadata.uid === ref?.uid && ready(pod) ? pod : undefined;
    });

    // Someone deletes the agent: upstream replaces it, and rollplane records an unplanned recreation.
    harness.sim.store.delete(pods, AGENT_NS, agent!.metadata.name!);
    const [event] = await harness.waitFor('AgentRecreated recorded, its intent gone', async () => {
      const list = await harness.events.listBefore({ types: ['AgentRecreated'] }, undefined, 10);
      return list.length > 0 && !notes.get('default', 'net-1') ? list : undefined;
    });
    const recordedAt = new Date(event!.createdAt).getTime();
    // The engine hears of net-1 after the record: observing it then finds the recreation done.
    await harness.waitFor('a notification after the record', () => seen.some((n) => n.at >= recordedAt && !n.inFlight), 5_000);
    expect(seen.at(-1)?.inFlight).toBe(false);
  });
});
