import { useEffect, useRef, useState } from 'react';
import { AnalysisCharts } from './AnalysisCharts.js';
import { gql } from './api.js';
import { QueryStatus, Section, Settings, StateBadge } from './components.js';
import { formatDuration, formatTime } from './format.js';
import {
  ApproveGateDocument,
  RejectGateDocument,
  RolloutGatesDocument,
  RolloutClusterTargetsDocument,
  type RolloutClusterTargetsQuery,
  RolloutRunDocument,
  RolloutRunEventsDocument,
  type RolloutRunQuery,
  type RunGateFieldsFragment,
  type RunGateSpecFieldsFragment,
} from './generated/graphql.js';
import { useAction, useLive, useLiveConnection, useQuery, useThrottled } from './hooks.js';
import { approvalConfigOf, type ClusterOutcome, clusterOutcomes, describeApproval, isExcludedStarter, mayDecide, secondsOf } from './runModel.js';
import { recordOf } from './json.js';
import { ACTIVE_STATES, RUN_EVENT_TYPES } from './types.js';

type Plan = NonNullable<NonNullable<RolloutRunQuery['rollout']>['wavePlan']>;
type PlannedWave = Plan['waves'][number];
type Gate = RunGateFieldsFragment;
/** The run a gate belongs to: whether it still goes (a decision is offered only then), and what to do after one. */
interface RunRef {
  id: string;
  active: boolean;
  /** The name of the token that started the run (Rollout.startedBy). */
  startedBy: string | null;
  onDecided: () => void;
}

/** Targets read to tell each cluster's outcome: one page at most (the API's largest), so that a page never loops. */
const OUTCOME_TARGETS = 1000;

/**
 * A staged rollout's run (issue 30, docs/waves.md): its waves in order, each with its state, its clusters in the order
 * they are taken and their outcomes, its soak and its gates (state, reason, every decision kept); the clusters in no
 * wave; and what the run waits for. Kept current by the rollout's updates (`version`) and by its wave, gate and window
 * events, each read at a pace its cost allows (ADR 0070). Renders nothing for a rollout without waves or gates, and
 * then reads nothing again. `targets`: how many the rollout has (its progress), the page of targets outcomes need.
 */
export function RolloutRun({ id, version, targets }: { id: string; version: number; targets: number }) {
  const planQuery = useQuery(RolloutRunDocument, { id });
  const gatesQuery = useQuery(RolloutGatesDocument, { id });
  const rollout = planQuery.data?.rollout;
  const gateList = gatesQuery.data?.rollout?.gates;
  const staged = !!rollout && (rollout.wavePlan !== null || (gateList?.length ?? 0) > 0);
  const events = useRunEvents(id, staged);
  useReloadWhile(staged, version + events.all, 1000, planQuery.reload);
  useReloadWhile(staged, events.gates + useStateChanges(rollout?.state), 500, gatesQuery.reload);
  const outcomes = useClusterOutcomes(id, targets, version + events.all, !staged);

  if (planQuery.data && gatesQuery.data && !staged) return null;
  const plan = rollout?.wavePlan;
  const gates = new Map((gateList ?? []).map((g) => [g.key, g]));
  const run: RunRef = {
    id,
    active: !!rollout && ACTIVE_STATES.includes(rollout.state),
    startedBy: rollout?.startedBy ?? null,
    onDecided: () => {
      gatesQuery.reload();
      planQuery.reload();
    },
  };
  return (
    <Section id="rollout-run" title={plan ? `Waves · ${plan.waves.length}` : 'Gates'}>
      <QueryStatus
        error={planQuery.error ?? gatesQuery.error}
        loading={planQuery.loading || gatesQuery.loading}
        hasData={!!rollout && !!gateList}
        what="the run's waves and gates"
      >
        {rollout?.startedBy && (
          <p className="muted small" data-started-by="">
            Started by <code>{rollout.startedBy}</code>
          </p>
        )}
        {rollout?.waitingFor && (
          <p className="waiting-for" role="status" data-waiting-for="">
            <strong>Waiting for:</strong> {rollout.waitingFor}
          </p>
        )}
        {plan && (
          <>
            <p className="muted small">
              On a failed wave: <code>{plan.failurePolicy}</code> · an unreachable cluster: <code>{plan.unreachable}</code>
            </p>
            <ol className="waves" aria-label={`Waves of rollout ${id}, in order`}>
              {plan.waves.map((wave, i) => (
                <WaveItem key={wave.name} run={run} wave={wave} position={i + 1} gates={gates} outcomes={outcomes.byCluster} />
              ))}
            </ol>
            <p className="small" data-excluded="">
              <span className="muted">Excluded (in no wave, their targets SKIPPED):</span>{' '}
              {plan.excluded.length === 0 ? 'none' : plan.excluded.map((c) => <code key={c}>{c} </code>)}
            </p>
            {outcomes.note && <p className="muted small">{outcomes.note}</p>}
          </>
        )}
        {!plan && gateList && (
          <ul className="gates">
            {gateList.map((g) => (
              <li key={g.key}>
                <GatePanel run={run} gateKey={g.key} spec={g} gate={g} />
              </li>
            ))}
          </ul>
        )}
      </QueryStatus>
    </Section>
  );
}

/** Where a gate stands: before or after its wave, or between the targets of a rollout without waves (`targets:<n>`). */
function placeOf(gateKey: string): string {
  if (gateKey.startsWith('before:')) return 'Before the wave';
  if (gateKey.startsWith('after:')) return 'After the wave';
  const step = /^targets:(\d+)$/.exec(gateKey)?.[1];
  return step ? `After ${step} target${step === '1' ? '' : 's'}` : gateKey;
}

/** Calls `reload` when `changes` moves, at most once per `ms`, while `enabled`. */
function useReloadWhile(enabled: boolean, changes: number, ms: number, reload: () => void): void {
  const throttled = useThrottled(changes, ms);
  const first = useRef(throttled);
  useEffect(() => {
    if (enabled && throttled !== first.current) reload();
  }, [enabled, throttled, reload]);
}

/** A counter that moves each time `state` changes (a rollout's state: its gates may have ended with it; a gate's). */
function useStateChanges(state: string | undefined): number {
  const seen = useRef<{ state: string | undefined; count: number }>({ state, count: 0 });
  if (seen.current.state !== state) seen.current = { state, count: seen.current.count + 1 };
  return seen.current.count;
}

function WaveItem(props: {
  run: RunRef;
  wave: PlannedWave;
  position: number;
  gates: ReadonlyMap<string, Gate>;
  outcomes: ReadonlyMap<string, ClusterOutcome> | null;
}) {
  const { wave, run } = props;
  const limits = [
    `${wave.maxConcurrency} at once`,
    `tolerates ${wave.maxFailures} failed`,
    `soak ${wave.minSuccessSeconds} s`,
    wave.progressDeadlineSeconds !== null ? `deadline ${wave.progressDeadlineSeconds} s a target` : null,
    wave.mandatory ? 'mandatory' : null,
  ].filter((l): l is string => l !== null);
  return (
    <li className="wave" data-wave={wave.name} data-state={wave.state}>
      <h3>
        {props.position}. {wave.name}
        {wave.remainder && <span className="muted small"> (the clusters no wave picked)</span>} <StateBadge state={wave.state} />
      </h3>
      <p className="muted small">
        {limits.join(' · ')}
        {wave.startedAt && (
          <>
            {' '}
            · started {formatTime(wave.startedAt)} · {formatDuration(wave.startedAt, wave.finishedAt)}
          </>
        )}
      </p>
      {wave.reason && <p className="error small">{wave.reason}</p>}
      {wave.before && <GatePanel run={run} gateKey={`before:${wave.name}`} spec={wave.before} gate={props.gates.get(`before:${wave.name}`)} />}
      <ul className="wave-clusters" aria-label={`Clusters of wave ${wave.name}, in the order they are taken`}>
        {wave.clusters.map((cluster) => {
          const outcome = props.outcomes?.get(cluster);
          return (
            <li key={cluster} data-cluster={cluster} data-outcome={outcome ?? ''}>
              <code>{cluster}</code> {outcome ? <StateBadge state={outcome} /> : <span className="muted">—</span>}
            </li>
          );
        })}
      </ul>
      {wave.after && <GatePanel run={run} gateKey={`after:${wave.name}`} spec={wave.after} gate={props.gates.get(`after:${wave.name}`)} />}
    </li>
  );
}

/** A gate as configured and, once the run reached it, its state, reason and decisions; the decision form for those who may. */
function GatePanel(props: { run: RunRef; gateKey: string; spec: RunGateSpecFieldsFragment; gate: Gate | undefined }) {
  const { gate, gateKey, spec } = props;
  const caller = useLive().server?.caller;
  const role = caller?.role;
  const approval = spec.type === 'APPROVAL' ? approvalConfigOf(spec.config) : null;
  const analysisChanges = useStateChanges(gate ? `${gate.state}:${gate.reason}` : undefined);
  const starter = isExcludedStarter(spec, caller?.name, props.run.startedBy);
  const offered = mayDecide({ type: spec.type, config: spec.config, state: gate?.state }, role, props.run.active, starter);
  // The starter would be offered the buttons by its role alone: say why it is not.
  const starterNote = starter && mayDecide({ type: spec.type, config: spec.config, state: gate?.state }, role, props.run.active);
  return (
    <div className="gate" data-gate={gateKey} data-state={gate?.state ?? 'NOT_REACHED'}>
      <h4>
        {placeOf(gateKey)}: {spec.type.replace('_', ' ').toLowerCase()} <StateBadge state={gate?.state ?? 'NOT_REACHED'} />
      </h4>
      <p className="small">
        {approval ? (
          describeApproval(approval)
        ) : spec.type === 'TIMED_WAIT' ? (
          `waits ${secondsOf(spec.config)} s`
        ) : spec.type === 'ANALYSIS' ? (
          'measures on Prometheus (an Argo Rollouts AnalysisTemplate; its runs below)'
        ) : (
          <Settings value={recordOf(spec.config)} />
        )}
      </p>
      {gate && (
        <p className="small gate-reason">
          {gate.reason} <span className="muted">· opened {formatTime(gate.openedAt)}</span>
          {gate.endedAt && <span className="muted"> · ended {formatTime(gate.endedAt)}</span>}
        </p>
      )}
      {gate && gate.decisions.length > 0 && (
        <ul className="decisions" aria-label={`Decisions at gate ${gateKey}`}>
          {gate.decisions.map((d, i) => (
            // Decisions are kept in order and never edited: the position is their identity.
            // biome-ignore lint/suspicious/noArrayIndexKey: see above.
            <li key={i} data-decision={d.decision}>
              <StateBadge state={d.decision === 'APPROVE' ? 'APPROVED' : 'REJECTED'} /> by <code title={`token ${d.by}`}>{d.byName}</code> ({d.role}) at{' '}
              {formatTime(d.at)}
              {d.comment && <> · “{d.comment}”</>}
            </li>
          ))}
        </ul>
      )}
      {gate && spec.type === 'ANALYSIS' && (
        <AnalysisCharts rolloutId={props.run.id} gateKey={gateKey} waiting={gate.state === 'WAITING'} changes={analysisChanges} />
      )}
      {starterNote && (
        <p className="small" data-starter-note="">
          You started this run: another {approval?.role ?? 'deployer'} token decides at this gate.
        </p>
      )}
      {offered && <GateDecisionForm rolloutId={props.run.id} gateKey={gateKey} onDecided={props.run.onDecided} />}
    </div>
  );
}

/**
 * Approve or reject, with a comment. Offered to roles the gate accepts; the server still decides (the run's starter,
 * a gate that ended), and its refusal is shown with its code. A rejection fails the gate: it takes a second click.
 */
function GateDecisionForm({ rolloutId, gateKey, onDecided }: { rolloutId: string; gateKey: string; onDecided: () => void }) {
  const [comment, setComment] = useState('');
  const [confirmingReject, setConfirmingReject] = useState(false);
  const action = useAction();

  async function decide(verdict: 'approve' | 'reject') {
    if (verdict === 'reject' && !confirmingReject) {
      setConfirmingReject(true);
      return;
    }
    setConfirmingReject(false);
    const variables = { rolloutId, gate: gateKey, comment: comment.trim() || null };
    const decided = await action.run(
      async () => {
        if (verdict === 'approve') await gql(ApproveGateDocument, variables);
        else await gql(RejectGateDocument, variables);
      },
      `Not ${verdict === 'approve' ? 'approved' : 'rejected'}: `,
    );
    if (!decided) return;
    setComment('');
    onDecided();
  }

  return (
    <form className="gate-decision" aria-label={`Decide at gate ${gateKey}`} onSubmit={(e) => e.preventDefault()}>
      <label>
        Comment <input type="text" value={comment} maxLength={1000} placeholder="why (kept with the decision)" onChange={(e) => setComment(e.target.value)} />
      </label>
      <button
        type="button"
        className="action action-approve"
        disabled={action.busy}
        onClick={() => void decide('approve')}
        aria-label={`Approve gate ${gateKey}`}
      >
        Approve
      </button>
      <button
        type="button"
        className={`action action-reject${confirmingReject ? ' confirming' : ''}`}
        disabled={action.busy}
        onClick={() => void decide('reject')}
        onBlur={() => setConfirmingReject(false)}
        aria-label={confirmingReject ? `Confirm rejecting gate ${gateKey}` : `Reject gate ${gateKey}`}
      >
        {confirmingReject ? 'Confirm reject?' : 'Reject'}
      </button>
      {action.error && (
        <span className="error small" role="alert">
          {action.error}
        </span>
      )}
    </form>
  );
}

/**
 * Counts the run's wave, gate and window events (`all`) and its gate events (`gates`) as they arrive over the page's
 * WebSocket, resuming after reconnects.
 */
function useRunEvents(rolloutId: string, enabled: boolean): { all: number; gates: number } {
  const connection = useLiveConnection();
  const after = useLive().server?.lastEventId;
  const [count, setCount] = useState({ all: 0, gates: 0 });
  useEffect(() => {
    if (!enabled || after === undefined) return undefined;
    return connection.subscribe({
      query: RolloutRunEventsDocument,
      variables: { filter: { rolloutId, types: [...RUN_EVENT_TYPES] } },
      after,
      select: (data) => data.events,
      idOf: (event) => Number(event.id),
      onItem: (event) => setCount((c) => ({ all: c.all + 1, gates: c.gates + (event.type.startsWith('Gate') ? 1 : 0) })),
    });
  }, [connection, rolloutId, enabled, after]);
  return count;
}

/**
 * The clusters' outcomes from a page of as many targets as the rollout has (up to OUTCOME_TARGETS), refetched at most
 * every 2 s while the rollout changes. A rollout with more targets than that shows none (a partial list could call a
 * cluster done while a target of it is still pending) and says so.
 */
function useClusterOutcomes(
  rolloutId: string,
  targets: number,
  changes: number,
  skip: boolean,
): { byCluster: Map<string, ClusterOutcome> | null; note: string | null } {
  const query = useQuery(RolloutClusterTargetsDocument, { id: rolloutId, first: Math.min(OUTCOME_TARGETS, Math.max(1, targets)) }, { skip });
  useReloadWhile(!skip, changes, 2000, query.reload);
  return outcomesOf(query.data);
}

function outcomesOf(data: RolloutClusterTargetsQuery | undefined): { byCluster: Map<string, ClusterOutcome> | null; note: string | null } {
  const targets = data?.rollout?.targets;
  if (!targets) return { byCluster: null, note: null };
  if (targets.totalCount > targets.edges.length) {
    return {
      byCluster: null,
      note: `Cluster outcomes are not shown: the rollout has ${targets.totalCount} targets, more than the ${OUTCOME_TARGETS} one page reads.`,
    };
  }
  return { byCluster: clusterOutcomes(targets.edges.map((e) => e.node)), note: null };
}
