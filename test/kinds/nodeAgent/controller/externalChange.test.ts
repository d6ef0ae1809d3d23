import type { V1DaemonSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { externalChangeOf } from '../../../../src/kinds/nodeAgent/controller/externalChange.js';
import type { EventFilter, StoredEvent } from '../../../../src/domain/events.js';

const ds: V1DaemonSet = { metadata: { namespace: 'caa', name: 'agent' } };

/** A history of the set's UpstreamControllerChanged events, oldest first; listBefore answers newest first. */
function history(...changes: [string, string, boolean][]) {
  const events: StoredEvent[] = changes.map(([oldImage, newImage, planned], i) => ({
    id: i + 1,
    type: 'UpstreamControllerChanged',
    rolloutId: null,
    kind: 'NODE_AGENT',
    namespace: 'caa',
    name: 'agent',
    payload: { oldImage, newImage, planned },
    createdAt: new Date(1_000 * (i + 1)),
  }));
  const filters: EventFilter[] = [];
  return {
    filters,
    async listBefore(filter: EventFilter, _before: number | undefined, limit: number) {
      filters.push(filter);
      return [...events].reverse().slice(0, limit);
    },
  };
}

describe('externalChangeOf (node-agent drift after a change made outside rollplane)', () => {
  it('none without history, and it asks only about this set', async () => {
    const h = history();
    expect(await externalChangeOf(h, ds, 'v1')).toBeUndefined();
    expect(h.filters).toEqual([{ kind: 'NODE_AGENT', types: ['UpstreamControllerChanged'], namespace: 'caa', name: 'agent' }]);
  });

  it('the template image set outside rollplane: desired is the image before, since the change', async () => {
    expect(await externalChangeOf(history(['v1', 'v2', false]), ds, 'v2')).toEqual({ rolledOut: 'v1', since: new Date(1_000) });
  });

  it('consecutive outside changes go back to the image before the first', async () => {
    expect(await externalChangeOf(history(['v0', 'v1', false], ['v1', 'v2', false], ['v2', 'v3', false]), ds, 'v3')).toEqual({
      rolledOut: 'v0',
      since: new Date(1_000),
    });
  });

  it('a rollout since then (the template is no longer the change’s image) ends it', async () => {
    expect(await externalChangeOf(history(['v1', 'v2', false]), ds, 'v3')).toBeUndefined();
  });

  it('changed away and back again is no drift', async () => {
    expect(await externalChangeOf(history(['v1', 'v2', false], ['v2', 'v1', false]), ds, 'v1')).toBeUndefined();
  });

  it('a planned change stops the chain', async () => {
    expect(await externalChangeOf(history(['v0', 'v1', true], ['v1', 'v2', false]), ds, 'v2')).toEqual({ rolledOut: 'v1', since: new Date(2_000) });
  });
});
