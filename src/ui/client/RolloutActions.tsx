import { useState } from 'react';
import { describeError, gql } from './api.js';
import { useLive, useLiveStore } from './hooks.js';
import { ABORT, PAUSE, RESUME, ROLLBACK } from './queries.js';
import type { RolloutSummary } from './types.js';

type Action = 'pause' | 'resume' | 'abort' | 'rollback';

/** Abort and rollback cannot be undone: they take a second, explicit click. */
const NEEDS_CONFIRMATION: readonly Action[] = ['abort', 'rollback'];

function available(rollout: RolloutSummary): Action[] {
  switch (rollout.state) {
    case 'PENDING':
    case 'PROGRESSING':
      return ['pause', 'abort'];
    case 'PAUSED':
      return ['resume', 'abort'];
    case 'SUCCEEDED':
    case 'FAILED':
    case 'ABORTED':
      return ['rollback'];
    case 'ROLLED_BACK':
      return [];
  }
}

export function RolloutActions({ rollout }: { rollout: RolloutSummary }) {
  const store = useLiveStore();
  const live = useLive();
  const [busy, setBusy] = useState<Action | null>(null);
  const [confirming, setConfirming] = useState<Action | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rollbackId, setRollbackId] = useState<string | null>(null);

  async function run(action: Action) {
    if (NEEDS_CONFIRMATION.includes(action) && confirming !== action) {
      setConfirming(action);
      return;
    }
    setConfirming(null);
    setBusy(action);
    setError(null);
    try {
      const reason = 'from the rollplane web UI';
      switch (action) {
        case 'pause':
          store.applyRollout((await gql(PAUSE, { id: rollout.id, reason })).pauseRollout);
          break;
        case 'resume':
          store.applyRollout((await gql(RESUME, { id: rollout.id })).resumeRollout);
          break;
        case 'abort':
          store.applyRollout((await gql(ABORT, { id: rollout.id, reason })).abortRollout);
          break;
        case 'rollback': {
          const created = (await gql(ROLLBACK, { id: rollout.id, input: { cause: { message: reason } } })).rollbackRollout;
          store.applyRollout(created);
          setRollbackId(created.id);
          break;
        }
      }
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(null);
    }
  }

  // Only what the caller's role allows: a viewer sees no buttons that would all be refused.
  const role = live.server?.caller.role;
  const actions = role === 'viewer' ? [] : available(rollout);
  if (actions.length === 0 && !error && !rollbackId) return null;
  return (
    // biome-ignore lint/a11y/useSemanticElements: a labelled group of buttons, not a form section: a <fieldset> would need a <legend> and its own styling.
    <div className="actions" role="group" aria-label={`Actions for rollout ${rollout.id}`}>
      {actions.map((action) => (
        <button
          key={action}
          type="button"
          className={`action action-${action}${confirming === action ? ' confirming' : ''}`}
          disabled={busy !== null}
          onClick={() => void run(action)}
          onBlur={() => confirming === action && setConfirming(null)}
          aria-label={confirming === action ? `Confirm ${action} of rollout ${rollout.id}` : `${capitalize(action)} rollout ${rollout.id}`}
        >
          {busy === action ? `${capitalize(action)}…` : confirming === action ? `Confirm ${action}?` : capitalize(action)}
        </button>
      ))}
      {rollbackId && (
        <a className="small" href={`#/rollouts/${encodeURIComponent(rollbackId)}`}>
          rollback {rollbackId}
        </a>
      )}
      {error && (
        <span className="error small" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
