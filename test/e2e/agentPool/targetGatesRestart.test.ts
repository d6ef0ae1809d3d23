import { describe, expect, it } from 'vitest';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { NEW, rigPerTest, serviceEnv, startRig } from './rig.js';

/**
 * The service SIGKILLed while a gate between targets waits for its approval (issue 30, ADR 0071 addendum): the
 * restarted service (the next leader, on the same database) finds the same gate waiting — opened once, nothing more
 * admitted — takes the approval and finishes. The gate's state is the SQL rows', never the dead process' memory.
 */
const STATUS = `query ($id: ID!) { rollout(id: $id) { state waitingFor progress { succeeded pending }
  gates { key type state decisions { decision } } } }`;

const t = rigPerTest();

describe('a service killed while a gate between targets waits', () => {
  it('is continued by the restarted service: the same gate waits, one approval lets the rollout finish', async () => {
    t.rig = await startRig({ fleet: 'pools=3,nodes=2', delays: { podReadyMs: 20, podTerminateMs: 10 }, noApp: true });
    const r = t.rig;
    const env = serviceEnv(r);
    let service = await startService(env);
    t.service = service;
    await r.waitFor('pools listed', async () => (await gqlData(service.url, '{ agentPools { totalCount } }')).agentPools.totalCount === 3);
    const bump = await gqlData(service.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable: '1', gate: { type: 'APPROVAL', after: [1] } } },
    });
    const id = bump.bumpAgentImage.rollout.id as string;
    const status = async (url: string) => (await gqlData(url, STATUS, { id })).rollout;
    await r.waitFor('the gate targets:1 waiting', async () => (await status(service.url)).waitingFor?.startsWith('gate targets:1'));
    service.child.kill('SIGKILL');
    await service.exited;

    service = await startService(env);
    t.service = service;
    const waiting = await r.waitFor('the restarted service reporting the gate', async () => {
      const s = await status(service.url);
      return s.waitingFor?.startsWith('gate targets:1') ? s : undefined;
    });
    expect(waiting).toMatchObject({ state: 'PROGRESSING', progress: { succeeded: 1, pending: 2 } });
    expect(waiting.gates).toEqual([{ key: 'targets:1', type: 'APPROVAL', state: 'WAITING', decisions: [] }]);
    expect(r.agent('net-2')!.spec.containers[0].image).not.toBe(NEW);

    await gqlData(service.url, 'mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "targets:1") { state } }', { id });
    const done = await finishedRollout<{ state: string; gates: unknown[] }>(service.url, id, STATUS, 120_000);
    expect(done.state).toBe('SUCCEEDED');
    expect(done.gates).toEqual([{ key: 'targets:1', type: 'APPROVAL', state: 'PASSED', decisions: [{ decision: 'APPROVE' }] }]);
    for (let i = 1; i <= 3; i++) expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);
  }, 240_000);
});
