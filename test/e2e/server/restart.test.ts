import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import { gql } from '../../helpers/graphql.js';
import { startTestApp } from '../../helpers/app.js';
import { defaultStrategy } from '../../../src/domain/kinds/index.js';
import { eventOf } from '../../helpers/events.js';

describe('history across a restart', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-restart-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps rollouts, targets and events when the server stops and starts on the same database file', async () => {
    const databaseFile = path.join(dir, 'history.db');
    const first = await startTestApp({ databaseFile });
    const { rollout } = await first.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: 'a:1',
      toVersion: 'a:2',
      selector: { namespaces: ['default'] },
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'me' },
      idempotencyKey: { scope: 'anonymous', key: 'run-42' },
      targets: [{ namespace: 'default', name: 'net-1', fromVersion: 'a:1', toVersion: 'a:2' }],
    });
    await first.domain.rollouts.pause(rollout.id, 'before restart');
    await first.domain.events.append({
      type: EventType.AgentRecreated,
      kind: 'AGENT_POOL',
      namespace: 'default',
      name: 'net-1',
      payload: { pool: 'default/net-1', newImage: 'a:2' },
    });
    const lastId = await first.domain.events.lastEventId();
    await first.close();

    const second = await startTestApp({ databaseFile });
    try {
      const res = await gql(
        second.url,
        `query($id: ID!) { rollout(id: $id) { state message idempotencyKey targets { totalCount } events { edges { node { type } } } } serverInfo { lastEventId } }`,
        { id: rollout.id },
      );
      expect(res.data.rollout).toMatchObject({
        state: 'PAUSED',
        message: 'before restart',
        idempotencyKey: 'run-42',
        targets: { totalCount: 1 },
      });
      expect(res.data.rollout.events.edges.map((e: any) => e.node.type)).toEqual(['RolloutStateChanged', 'RolloutStateChanged']);
      expect(res.data.serverInfo.lastEventId).toBe(String(lastId));
      // Ids keep increasing after the restart; nothing is reused.
      const [next] = await second.domain.events.append(eventOf(EventType.AgentRecreated));
      expect(next!.id).toBe(lastId + 1);
      // The idempotency key still finds the same rollout.
      const again = await second.domain.rollouts.create({
        kind: 'AGENT_POOL',
        fromVersion: null,
        toVersion: 'a:2',
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
        cause: {},
        idempotencyKey: { scope: 'anonymous', key: 'run-42' },
        targets: [],
      });
      expect(again).toMatchObject({ created: false, rollout: { id: rollout.id } });
    } finally {
      await second.close();
    }
  });
});
