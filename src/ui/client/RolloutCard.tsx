import { useState } from 'react';
import { ProgressBar, StateBadge, Version } from './components.js';
import { formatTime } from './format.js';
import { kindLabel, useKinds } from './kindUi.js';
import { RolloutActions } from './RolloutActions.js';
import { TargetsTable } from './TargetsTable.js';
import type { RolloutSummary } from './types.js';

export function RolloutCard({ rollout, version }: { rollout: RolloutSummary; version: number }) {
  const kinds = useKinds();
  const [open, setOpen] = useState(false);
  const targetsId = `targets-${rollout.id}`;
  return (
    <article className={`rollout-card state-${rollout.state.toLowerCase()}`} data-rollout-id={rollout.id} aria-label={`Rollout ${rollout.id}`}>
      <header className="rollout-head">
        <StateBadge state={rollout.state} />
        <a className="rollout-id" href={`#/rollouts/${encodeURIComponent(rollout.id)}`}>
          {rollout.id}
        </a>
        <span className="muted">{kindLabel(kinds, rollout.kind)}</span>
        <span className="versions">
          <Version value={rollout.fromVersion} /> → <Version value={rollout.toVersion} />
        </span>
      </header>
      <ProgressBar progress={rollout.progress} state={rollout.state} label={`Progress of rollout ${rollout.id}`} />
      <div className="rollout-meta">
        <span>
          by {rollout.cause.actor ?? 'unknown'}
          {rollout.cause.commit && (
            <>
              {' '}
              at <code>{rollout.cause.commit.slice(0, 12)}</code>
            </>
          )}
        </span>
        <span className="muted">started {formatTime(rollout.createdAt)}</span>
        {rollout.message && <span className="message">{rollout.message}</span>}
      </div>
      <div className="rollout-foot">
        <RolloutActions rollout={rollout} />
        <button type="button" className="link-button" aria-expanded={open} aria-controls={targetsId} onClick={() => setOpen((o) => !o)}>
          {open ? 'Hide targets' : `Show ${rollout.progress.total} targets`}
        </button>
      </div>
      {open && (
        <div id={targetsId}>
          <TargetsTable rolloutId={rollout.id} version={version} compact />
        </div>
      )}
    </article>
  );
}
