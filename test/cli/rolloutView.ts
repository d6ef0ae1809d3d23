import type { RolloutView } from '../../src/cli/operations.js';

/** A rollout as the API answers it to the CLI (agent pools a:1 → a:2, PENDING, nothing done yet), with `overrides`. */
export function rolloutView(overrides: Partial<RolloutView> = {}): RolloutView {
  return {
    id: 'ro_1',
    kind: 'AGENT_POOL',
    state: 'PENDING',
    fromVersion: 'a:1',
    toVersion: 'a:2',
    selector: {},
    message: null,
    idempotencyKey: null,
    createdAt: '2026-11-30T00:00:00.000Z',
    updatedAt: '2026-11-30T00:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    cause: { actor: null, runUrl: null, commit: null, message: null },
    strategy: {
      maxUnavailable: '1',
      maxConcurrent: null,
      canary: null,
      progressDeadlineSeconds: 600,
      failureThreshold: 1,
      autoRollback: false,
      mode: null,
      minReadySeconds: null,
    },
    progress: { total: 0, pending: 0, progressing: 0, succeeded: 0, failed: 0, skipped: 0, cancelled: 0, percent: 100 },
    ...overrides,
  };
}
