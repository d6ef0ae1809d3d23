import { describe, expect, it } from 'vitest';
import type { RolloutKind } from '../../src/domain/events.js';
import { overlapConflict } from '../../src/domain/launchRules.js';
import { KIND_CONTRACTS } from '../../src/kinds/index.js';

/** Whether a kind's bump offers supersede, as its registered contract says. */
const offers = (kind: RolloutKind) => KIND_CONTRACTS[kind].offersSupersede === true;

const covered = [
  { rolloutId: 'ro_a', namespace: '', name: 'node-1' },
  { rolloutId: 'ro_a', namespace: '', name: 'node-2' },
];

describe('the overlap refusal', () => {
  it('advises supersede only where the mutation offers it (attack finding F9: bumpNodeAgentImage has no supersede)', () => {
    expect(overlapConflict(offers('NODE_AGENT'), covered).message).toBe(
      'active rollout ro_a already covers node-1 (and 1 more targets); wait for it, or abort it',
    );
    expect(overlapConflict(offers('VIRTUAL_CLUSTER'), covered).message).not.toContain('supersede');
    expect(overlapConflict(offers('AGENT_POOL'), [{ rolloutId: 'ro_b', namespace: 'default', name: 'net-1' }]).message).toBe(
      'active rollout ro_b already covers default/net-1; wait for it, abort it, or pass supersede: true',
    );
  });

  it('names every rollout it collides with in the details', () => {
    const error = overlapConflict(offers('NODE_AGENT'), [...covered, { rolloutId: 'ro_c', namespace: '', name: 'node-3' }]);
    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ rolloutIds: ['ro_a', 'ro_c'] });
  });
});
