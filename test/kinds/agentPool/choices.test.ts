import { describe, expect, it } from 'vitest';
import { AgentPoolChoices, sharedAgentPoolChoices } from '../../../src/kinds/agentPool/choices.js';
import type { Rollout, RolloutTarget } from '../../../src/domain/RolloutService.js';

/**
 * The decisions every cluster's agent-pool views read (issue 29's 1,000-cluster bench): one reading of the history per
 * change of it, however many clusters ask at once, and one copy of it per history.
 */
function fakeHistory(eventId: { value: number }) {
  const reads = { targets: 0 };
  const rollout = { id: 'r1', state: 'PROGRESSING', toVersion: 'agent:v2', createdAt: new Date(0) } as Rollout;
  const targets = ['local', 'edge-1', 'edge-2'].map(
    (cluster) => ({ cluster, namespace: 'default', name: 'net-1', state: 'PROGRESSING', fromVersion: 'agent:v1', toVersion: 'agent:v2' }) as RolloutTarget,
  );
  const rollouts = {
    list: async () => ({ items: [rollout], hasNextPage: false, endCursor: null }),
    allTargets: async () => {
      reads.targets++;
      // An answer that takes a while, as a read of 3,000 rows does: every caller asks before it comes.
      await new Promise((resolve) => setTimeout(resolve, 5));
      return targets;
    },
  } as unknown as ConstructorParameters<typeof AgentPoolChoices>[0];
  // The newest event's id (the cache's key); no recorded change of a vm-dhcp-controller.
  const events = {
    listBefore: async (filter: { types: string[] }) => (filter.types.length === 1 ? [] : [{ id: eventId.value }]),
  } as unknown as ConstructorParameters<typeof AgentPoolChoices>[1];
  return { rollouts, events, reads };
}

describe('AgentPoolChoices', () => {
  it('reads the history once for callers that ask at once, and again only after it changed', async () => {
    const eventId = { value: 1 };
    const { rollouts, events, reads } = fakeHistory(eventId);
    const choices = new AgentPoolChoices(rollouts, events);
    const answers = await Promise.all(Array.from({ length: 50 }, () => choices.current()));
    expect(reads.targets).toBe(1);
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]!.choices.get('edge-2|default/net-1')).toEqual({ image: 'agent:v2', rolloutId: 'r1' });
    await choices.current();
    expect(reads.targets).toBe(1);
    eventId.value = 2;
    await Promise.all([choices.current(), choices.current()]);
    expect(reads.targets).toBe(2);
  });

  it('is one per history, shared by every cluster', () => {
    const { rollouts, events } = fakeHistory({ value: 1 });
    const other = fakeHistory({ value: 1 });
    expect(sharedAgentPoolChoices(rollouts, events)).toBe(sharedAgentPoolChoices(rollouts, events));
    expect(sharedAgentPoolChoices(other.rollouts, other.events)).not.toBe(sharedAgentPoolChoices(rollouts, events));
  });
});
