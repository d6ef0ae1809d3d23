import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { describe, expect, it } from 'vitest';
import type { IdempotencyRecord } from '../../src/domain/historyPort.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { type LaunchRequest, RolloutLauncher } from '../../src/domain/RolloutLauncher.js';
import type { Rollout, RolloutService } from '../../src/domain/RolloutService.js';

const KEY = 'ci-build-42';

/** Another request's rollout under KEY, as another replica commits it: the rollout and its record together. */
const theirs = { id: 'ro_theirs', kind: 'NODE_AGENT', toVersion: 'agent:v9' } as Rollout;
const theirRecord: IdempotencyRecord = {
  scope: 'anonymous',
  key: KEY,
  operation: 'NODE_AGENT',
  requestHash: 'not-this-request',
  rolloutId: theirs.id,
  createdAt: new Date(),
};

/**
 * The store as a replica sees it while another one commits: nothing under the key for the first read, then the
 * committed rollout and its record for every later read (they commit in one transaction).
 */
function committingBetweenReads(): RolloutService {
  let reads = 0;
  const committed = () => reads++ > 0;
  return {
    findByIdempotencyKey: async () => (committed() ? theirs : undefined),
    idempotencyRecord: async () => (committed() ? theirRecord : undefined),
    get: async (id: string) => (committed() && id === theirs.id ? theirs : undefined),
  } as unknown as RolloutService;
}

const request: LaunchRequest = {
  plan: {
    kind: 'AGENT_POOL',
    fromVersion: 'agent:v1',
    toVersion: 'agent:v2',
    selector: {},
    strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    targets: [{ namespace: 'default', name: 'net-1', fromVersion: 'agent:v1', toVersion: 'agent:v2' }],
  },
  cause: { actor: 'ci' },
  idempotencyKey: { scope: 'anonymous', key: KEY },
  dryRun: true,
  request: { image: 'agent:v2' },
};

describe('RolloutLauncher idempotency replay', () => {
  it("never answers with another request's rollout committed between its reads of the key", async () => {
    // Reading the record first saw none, then found the rollout and took it for this request's (attack finding F3).
    const outcome = await new RolloutLauncher(committingBetweenReads()).launch(request).then(
      (result) => ({ rollout: result.rollout.id, created: result.created }),
      (error: Error) => ({ error: error.message }),
    );
    expect(outcome).not.toMatchObject({ rollout: theirs.id });
  });

  it('refuses a different request under a key whose rollout and record are committed', async () => {
    const store = {
      findByIdempotencyKey: async () => theirs,
      idempotencyRecord: async () => theirRecord,
      get: async () => theirs,
    } as unknown as RolloutService;
    await expect(new RolloutLauncher(store).launch(request)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: `idempotency key "${KEY}" was already used for a different request (rollout ${theirs.id})`,
    });
  });
});
