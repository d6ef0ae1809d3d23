import type { Role } from '../../auth/roles.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import type { EventLog } from '../EventLog.js';
import { EventType, type NewEvent, type RolloutKind } from '../events.js';
import { checkDecision, parseApprovalRule, type ApprovalRuleInput, approvalStatus } from '../gates/approval.js';
import { targetGateStep } from '../gates/targetGates.js';
import { nextAnalysisStep, type TargetGateSpec } from '../kinds/strategy.js';
import { GATE_TYPES, type GateAttempt, type GateFacts, type GateRef, type GateTypes, gateTypeOf } from '../gates/registry.js';
import type { GateAttemptRow, GateDecisionRow, GateRow, HistoryStore } from '../historyPort.js';
import { ACTIVE_ROLLOUT_STATES, type RolloutState } from '../rolloutStates.js';
import type { GateProgress } from './progress.js';
import { type FrozenRun, type GateSpec, runOfRows } from './strategy.js';

/** A wave's recorded state (RolloutWave row). */
export interface WaveState {
  state: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  reason: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A staged rollout's frozen run with each wave's recorded state (in wave order). */
export interface StoredRun extends FrozenRun {
  readonly waveStates: readonly WaveState[];
}

/** A gate as opened, with its kept decisions and attempts and its progress as computed now. */
export interface GateView {
  row: GateRow;
  decisions: GateDecisionRow[];
  attempts: GateAttemptRow[];
  progress: GateProgress;
}

/** What a gate's reference needs from its rollout (GateRef.version, baselineVersion). */
export interface GateRollout {
  id: string;
  toVersion: string | null;
  fromVersion: string | null;
}

/**
 * Where a rollout's gates stand, and what a gate's reference needs from its rollout: a staged rollout's run (gates
 * before or after its waves), or — a rollout without waves — no run, its gates standing between its targets
 * (`targets:<n>`, issue 30, ADR 0071 addendum), each step's clusters as the engine's pass knows them.
 */
export interface GatePlace {
  rollout: GateRollout;
  run?: StoredRun;
  /** A rollout without waves: the clusters of the targets of the step at hand (absent: not known here, none shown). */
  stepClusters?: readonly string[];
}

/** A wave's change of state, with its event (RolloutEngine writes it before acting on the step). */
export interface WaveUpdate {
  ordinal: number;
  name: string;
  clusters: readonly string[];
  to: WaveState['state'];
  reason: string | null;
}

/** A decision at an approval gate, as the API asks for it. */
export interface GateDecisionRequest {
  rolloutId: string;
  gateKey: string;
  verdict: 'APPROVE' | 'REJECT';
  comment: string | null;
  /** Token id, or `anonymous`. */
  deciderId: string;
  role: Role;
}

/**
 * Decisions one gate keeps at most (what its `decisions` list holds, and so what a query of a rollout's gates costs):
 * twice the most approvers a gate may need (approval.ts); approving twice is kept, and counts once.
 */
export const MAX_GATE_DECISIONS = 20;

/** Parsed frozen runs kept in memory (StagedRuns.runOf): more than the staged runs a deployment has under way. */
const FROZEN_RUNS_KEPT = 2_000;

/**
 * The store side of staged rollouts (issue 30, ADR 0065): the frozen run, its waves' recorded states, its gates and
 * their decisions. Every write commits with its event (WaveStarted/WaveFinished, GateWaiting/GateEnded,
 * GateApproved/GateRejected), so what the history shows and what the engine decides from never disagree.
 */
export class StagedRuns {
  constructor(
    private readonly store: HistoryStore,
    private readonly log: EventLog,
    /** The gate types this rollplane knows (the built-ins, and those the composition root adds: ADR 0068). */
    readonly types: GateTypes = GATE_TYPES,
  ) {}

  /**
   * Runs as frozen at launch, parsed, by rollout id: they never change, and a staged pass asks for its run every time
   * (parsing each wave's cluster list was the largest own cost of 100 runs x 1,000 clusters, bench waves). Only the
   * waves' recorded states are taken from the rows each time. Bounded: the oldest entry goes first.
   */
  private readonly frozen = new Map<string, FrozenRun>();

  async runOf(rolloutId: string): Promise<StoredRun | undefined> {
    const rows = await this.store.read.runOf(rolloutId);
    if (!rows) return undefined;
    let frozen = this.frozen.get(rolloutId);
    if (!frozen) {
      frozen = runOfRows(rows);
      this.frozen.set(rolloutId, frozen);
      if (this.frozen.size > FROZEN_RUNS_KEPT) this.frozen.delete(this.frozen.keys().next().value!);
    }
    return {
      ...frozen,
      waveStates: rows.waves.map((w) => ({ state: w.state as WaveState['state'], reason: w.reason, startedAt: w.startedAt, finishedAt: w.finishedAt })),
    };
  }

  /**
   * Every gate the rollout opened, with its decisions, its attempts and its progress as of `now` — computed from what
   * was kept (a type's progress reads SQL, never a network). `known`: the rollout and its run (none for a rollout
   * without waves), when the caller has them (the engine's pass), saving their reads.
   */
  async gates(rolloutId: string, now: Date, known?: GatePlace): Promise<GateView[]> {
    const rows = await this.store.read.gatesOf(rolloutId);
    if (rows.length === 0) return [];
    const context = known ?? (await this.contextOf(rolloutId));
    return Promise.all(
      rows.map(async (row) => {
        const [decisions, attempts] = await Promise.all([this.store.read.gateDecisions(row.id), this.store.read.gateAttempts(row.id)]);
        const progress = context ? await this.progressOf(row, decisions, attempts, context, now) : { state: 'WAITING' as const, reason: 'rollout not found' };
        return { row, decisions, attempts, progress };
      }),
    );
  }

  /**
   * Opens the gate at `key` (once: a gate already open stays as it is) with a GateWaiting event, then starts what its
   * type waits on (`open`: an analysis run, a first check). A crash between the two is harmless: the engine calls
   * `open` again on each pass while the gate waits (startWaiting). `place`: the staged run, or a step's clusters.
   */
  async openGate(rollout: GateRollout & { kind: RolloutKind }, place: Omit<GatePlace, 'rollout'>, key: string, spec: GateSpec, now: Date): Promise<void> {
    const rolloutId = rollout.id;
    const kind = rollout.kind;
    const row: GateRow = {
      id: `${rolloutId}:${key}`,
      rolloutId,
      key,
      type: spec.type,
      config: JSON.stringify(spec.config),
      state: 'WAITING',
      reason: '',
      openedAt: now,
      endedAt: null,
    };
    const known: GatePlace = { ...place, rollout };
    const progress = await this.progressOf(row, [], [], known, now);
    await this.log.commit(function* (tx) {
      const opened = yield* tx.insertGate({ ...row, reason: progress.reason });
      const events: NewEvent[] = opened
        ? [{ type: EventType.GateWaiting, rolloutId, kind, payload: { gateKey: key, type: spec.type, reason: progress.reason } }]
        : [];
      return { result: undefined, events };
    });
    const [opened] = await this.gates(rolloutId, now, known).then((all) => all.filter((g) => g.row.key === key));
    if (opened) await this.startWaiting([opened], known, now);
  }

  /**
   * Retries a gate (retryGate; argo-rollouts#2897): its type measures again, as a new attempt linked to the old one.
   * NOT_FOUND for a gate the run does not have; CONFLICT for a run that is not staged or not active, a gate not
   * opened yet, a type that cannot be retried (only ANALYSIS), and a gate that neither failed nor holds the run.
   */
  async retry(rollout: GateRollout & { state: string }, gateKey: string, now: Date): Promise<GateView> {
    const run = await this.runOf(rollout.id);
    if (!run) throw new ConflictError(`rollout ${rollout.id} is not staged: it has no gates`);
    const known = { run, rollout };
    const gate = (await this.gates(rollout.id, now, known)).find((g) => g.row.key === gateKey);
    if (!gate) {
      const keys = run.waves.flatMap((w) => [w.before ? `before:${w.name}` : null, w.after ? `after:${w.name}` : null]).filter(Boolean);
      if (!keys.includes(gateKey)) throw new NotFoundError(`rollout ${rollout.id} has no gate ${gateKey} (its gates: ${keys.join(', ') || 'none'})`);
      throw new ConflictError(`gate ${gateKey} of rollout ${rollout.id} has not opened yet`);
    }
    const type = gateTypeOf(gate.row.type, 'type', this.types);
    if (!type.retry) throw new ConflictError(`gate ${gateKey} is of type ${gate.row.type}: only an ANALYSIS gate can be retried`);
    if (!ACTIVE_ROLLOUT_STATES.includes(rollout.state as RolloutState))
      throw new ConflictError(`rollout ${rollout.id} is ${rollout.state}: its gates can no longer be retried`);
    if (gate.progress.state !== 'FAILED' && !gate.progress.holds) {
      throw new ConflictError(
        `gate ${gateKey} is ${gate.progress.state} (${gate.progress.reason}): only a failed, inconclusive or errored gate can be retried`,
      );
    }
    await type.retry(JSON.parse(gate.row.config) as Record<string, unknown>, factsOf(gate.row, gate.decisions, gate.attempts, refOf(gate.row, known), now));
    return (await this.gates(rollout.id, now, known)).find((g) => g.row.key === gateKey)!;
  }

  /**
   * Starts (again) what each WAITING gate's type waits on — idempotent: an analysis already measured here, an
   * attempt already under way, start nothing. Called by the engine on each pass, so a new leader picks up every gate
   * the last one left waiting. Returns once the work is started; nothing here waits on a network.
   */
  async startWaiting(gates: readonly GateView[], known: GatePlace, now: Date): Promise<void> {
    await Promise.all(
      gates
        .filter((g) => g.progress.state === 'WAITING')
        .map(async (g) => {
          const type = gateTypeOf(g.row.type, 'type', this.types);
          if (!type.open) return;
          await type.open(JSON.parse(g.row.config) as Record<string, unknown>, factsOf(g.row, g.decisions, g.attempts, refOf(g.row, known), now));
        }),
    );
  }

  /** A gate's progress from its type's rule and what was kept about it. */
  private async progressOf(
    row: GateRow,
    decisions: readonly GateDecisionRow[],
    attempts: readonly GateAttemptRow[],
    known: GatePlace,
    now: Date,
  ): Promise<GateProgress> {
    const type = gateTypeOf(row.type, 'type', this.types);
    return type.progress(JSON.parse(row.config) as Record<string, unknown>, factsOf(row, decisions, attempts, refOf(row, known), now));
  }

  /** The rollout and its run; a rollout without waves has none (its gates stand between its targets). */
  private async contextOf(rolloutId: string): Promise<GatePlace | undefined> {
    const [run, rollout] = await Promise.all([this.runOf(rolloutId), this.store.read.findRollout(rolloutId)]);
    if (!rollout) return undefined;
    return run ? { run, rollout } : { rollout };
  }

  /** Records gates whose computed state changed since it was last written (PASSED or FAILED: they ended). */
  async recordGates(rolloutId: string, kind: RolloutKind, gates: readonly GateView[], now: Date): Promise<void> {
    const changed = gates.filter((g) => g.row.state !== g.progress.state || (g.progress.state === 'WAITING' && g.row.reason !== g.progress.reason));
    if (changed.length === 0) return;
    await this.log.commit(function* (tx) {
      const events: NewEvent[] = [];
      for (const { row, progress } of changed) {
        const ended = progress.state !== 'WAITING';
        yield* tx.updateGate(row.id, progress.state, progress.reason, ended ? now : null);
        if (ended && row.state === 'WAITING') {
          events.push({
            type: EventType.GateEnded,
            rolloutId,
            kind,
            payload: {
              gateKey: row.key,
              type: row.type,
              state: progress.state as 'PASSED' | 'FAILED',
              reason: progress.reason,
              waitedSeconds: (now.getTime() - row.openedAt.getTime()) / 1000,
            },
          });
        }
      }
      return { result: undefined, events };
    });
  }

  /**
   * A wave held by maintenance windows (WindowClosed), or admitted again (WindowOpened): the event and the rollout's
   * `windowHeld` in one transaction, so each is written once per hold whatever crashes.
   */
  async recordWindow(
    rolloutId: string,
    kind: RolloutKind,
    change:
      | { held: true; wave: string; clusters: readonly string[]; reason: string; until: Date | null }
      | { held: false; wave: string; clusters: readonly string[] },
    now: Date,
  ): Promise<void> {
    await this.log.commit(function* (tx) {
      const row = yield* tx.lockRollout(rolloutId);
      if (!row) return { result: undefined, events: [] };
      const engineState = JSON.parse(row.engineState) as { windowHeld?: string | null };
      if ((engineState.windowHeld ?? null) === (change.held ? change.wave : null)) return { result: undefined, events: [] };
      yield* tx.updateEngineState(rolloutId, JSON.stringify({ ...engineState, windowHeld: change.held ? change.wave : null }), now);
      const event: NewEvent = change.held
        ? {
            type: EventType.WindowClosed,
            rolloutId,
            kind,
            payload: { waveName: change.wave, clusters: [...change.clusters], reason: change.reason, until: change.until?.toISOString() ?? null },
          }
        : { type: EventType.WindowOpened, rolloutId, kind, payload: { waveName: change.wave, clusters: [...change.clusters] } };
      return { result: undefined, events: [event] };
    });
  }

  /** Writes waves' new states with their WaveStarted/WaveFinished events. */
  async recordWaves(rolloutId: string, kind: RolloutKind, run: StoredRun, updates: readonly WaveUpdate[], now: Date): Promise<void> {
    if (updates.length === 0) return;
    await this.log.commit(function* (tx) {
      const events: NewEvent[] = [];
      for (const u of updates) {
        const was = run.waveStates[u.ordinal]!;
        const starts = was.state === 'PENDING';
        const ends = u.to === 'SUCCEEDED' || u.to === 'FAILED';
        yield* tx.updateWave(rolloutId, u.ordinal, u.to, u.reason, starts ? now : null, ends ? now : null);
        if (starts) events.push({ type: EventType.WaveStarted, rolloutId, kind, payload: { waveName: u.name, clusters: [...u.clusters] } });
        if (ends) {
          const startedAt = was.startedAt ?? now;
          events.push({
            type: EventType.WaveFinished,
            rolloutId,
            kind,
            payload: {
              waveName: u.name,
              outcome: u.to as 'SUCCEEDED' | 'FAILED',
              reason: u.reason,
              durationSeconds: (now.getTime() - startedAt.getTime()) / 1000,
            },
          });
        }
      }
      return { result: undefined, events };
    });
  }

  /**
   * Approves or rejects a gate. Under the rollout's row lock, so that two decisions and the run's end are ordered:
   * the rules (approval.ts) see every decision kept before this one. FORBIDDEN (role, the starter) and CONFLICT (the
   * gate or the run ended; not an approval gate) change nothing; approving twice is kept and counts once.
   */
  async decide(request: GateDecisionRequest, now: Date): Promise<GateView> {
    const { rolloutId, gateKey } = request;
    const types = this.types;
    const view = await this.log.commit<Omit<GateView, 'progress'>>(function* (tx) {
      const rollout = yield* tx.lockRollout(rolloutId);
      if (!rollout) throw new NotFoundError(`rollout ${rolloutId} not found`, { details: { id: rolloutId } });
      const run = yield* tx.runOf(rolloutId);
      // A rollout without waves has gates only between its targets (`strategy.gate`): `targets:<n>`, opened one by one.
      const between = run ? undefined : (JSON.parse(rollout.strategy) as { gate?: TargetGateSpec }).gate;
      if (!run && !between) throw new ConflictError(`rollout ${rolloutId} has no gates (neither waves nor a gate between its targets)`);
      const gate = (yield* tx.gatesOf(rolloutId)).find((g) => g.key === gateKey);
      if (!gate) {
        if (!run) {
          const step = targetGateStep(gateKey);
          if (step === undefined || !between || nextAnalysisStep(between, Infinity, step - 1) !== step) {
            throw new NotFoundError(`rollout ${rolloutId} has no gate ${gateKey} (its gates between targets open after ${stepsText(between)} targets)`);
          }
          throw new ConflictError(`gate ${gateKey} of rollout ${rolloutId} has not opened yet`);
        }
        const known = run.waves.flatMap((w) => [w.beforeGate ? `before:${w.name}` : null, w.afterGate ? `after:${w.name}` : null]).filter(Boolean);
        if (!known.includes(gateKey)) throw new NotFoundError(`rollout ${rolloutId} has no gate ${gateKey} (its gates: ${known.join(', ') || 'none'})`);
        throw new ConflictError(`gate ${gateKey} of rollout ${rolloutId} has not opened yet`);
      }
      if (!gateTypeOf(gate.type, 'type', types).takesDecisions) throw new ConflictError(`gate ${gateKey} is a ${gate.type} gate: nobody decides on it`);
      const decisions = yield* tx.gateDecisions(gate.id);
      if (decisions.length >= MAX_GATE_DECISIONS) throw new ConflictError(`gate ${gateKey} already keeps ${MAX_GATE_DECISIONS} decisions`);
      const rule = parseApprovalRule(JSON.parse(gate.config) as ApprovalRuleInput, 'config');
      const status = approvalStatus(rule, decisions.map(approvalDecisionOf), gate.openedAt, now);
      const kept = checkDecision(
        rule,
        status,
        { by: { id: request.deciderId, name: request.deciderId, role: request.role }, verdict: request.verdict, comment: request.comment, at: now },
        // The run's starter, else the rollout's: a rollout without waves (gates between its targets) keeps it on itself
        // alone; rollouts written before Rollout.startedBy was kept have it null, and their run's is the one there is.
        { startedBy: run?.run.startedBy ?? rollout.startedBy ?? null, runActive: ACTIVE_ROLLOUT_STATES.includes(rollout.state as RolloutState) },
      );
      const row = { gateId: gate.id, tokenId: request.deciderId, role: request.role, decision: request.verdict, comment: kept.comment, at: now };
      yield* tx.insertGateDecision(row);
      const all = [...decisions, { ...row, id: 0 }];
      const payload = { gateKey, by: request.deciderId, role: request.role, comment: kept.comment };
      const event: NewEvent =
        request.verdict === 'APPROVE'
          ? { type: EventType.GateApproved, rolloutId, kind: rollout.kind as RolloutKind, payload }
          : { type: EventType.GateRejected, rolloutId, kind: rollout.kind as RolloutKind, payload };
      return { result: { row: gate, decisions: all, attempts: [] }, events: [event] };
    });
    const known = await this.contextOf(rolloutId);
    return { ...view, progress: known ? await this.progressOf(view.row, view.decisions, [], known, now) : { state: 'WAITING', reason: '' } };
  }
}

function stepsText(spec: TargetGateSpec | undefined): string {
  return [spec?.after?.length ? spec.after.join(', ') : '', spec?.every ? `every ${spec.every}` : ''].filter(Boolean).join(' and ') || 'no';
}

function approvalDecisionOf(d: GateDecisionRow) {
  return { by: { id: d.tokenId, name: d.tokenId, role: d.role as Role }, verdict: d.decision as 'APPROVE' | 'REJECT', at: d.at, comment: d.comment };
}

/** What a gate's type computes its progress from. */
function factsOf(row: GateRow, decisions: readonly GateDecisionRow[], attempts: readonly GateAttemptRow[], gate: GateRef, now: Date): GateFacts {
  return {
    openedAt: row.openedAt,
    now,
    decisions: decisions.map((d) => ({
      deciderId: d.tokenId,
      role: d.role as Role,
      verdict: d.decision as 'APPROVE' | 'REJECT',
      at: d.at,
      comment: d.comment,
    })),
    attempts: attempts.map(
      (a): GateAttempt => ({ seq: a.seq, startedAt: a.startedAt, at: a.at, answer: a.answer as GateAttempt['answer'], afterMs: a.afterMs, reason: a.reason }),
    ),
    gate,
  };
}

/**
 * The gate's place in its run (the wave it stands before or after) and the rollout's versions. A gate between the
 * targets of a rollout without waves stands at its step: the wave is `{name: 'targets:<n>', ordinal: n, clusters}`.
 */
function refOf(row: GateRow, known: GatePlace): GateRef {
  return {
    id: row.id,
    rolloutId: row.rolloutId,
    key: row.key,
    wave: waveOf(row.key, known),
    version: known.rollout.toVersion ?? '',
    baselineVersion: known.rollout.fromVersion,
  };
}

function waveOf(key: string, known: GatePlace): GateRef['wave'] {
  if (!known.run) return { name: key, ordinal: targetGateStep(key) ?? -1, clusters: known.stepClusters ?? [] };
  const name = key.slice(key.indexOf(':') + 1);
  const ordinal = known.run.waves.findIndex((w) => w.name === name);
  return { name, ordinal, clusters: known.run.waves[ordinal]?.clusters ?? [] };
}
