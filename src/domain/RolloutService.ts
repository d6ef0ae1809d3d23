import { clusterField, targetKey, type TargetRef } from './ports.js';
import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError } from '../errors.js';
import type {
  CoveredTarget,
  HistoryStore,
  HistoryTx,
  IdempotencyKeyRef,
  IdempotencyRecord,
  NewRevision,
  RolloutPosition,
  RolloutRow,
  Step,
  TargetRow,
  TargetsOnly,
} from './historyPort.js';
import {
  ABORTED_FOR_ROLLBACK,
  type BusyRollout,
  changedByRollout,
  checkReplay,
  RollbackPlanStale,
  type LaunchRules,
  overlapConflict,
  overlapsOf,
  stillChangingConflict,
  SUPERSEDED,
} from './launchRules.js';
import type { EventLog } from './EventLog.js';
import { type FrozenRun, runRows } from './waves/strategy.js';
import { type GateView, StagedRuns } from './waves/StagedRuns.js';
import { GATE_TYPES, type GateTypes } from './gates/registry.js';
import { type TargetGates, targetGateStep } from './gates/targetGates.js';
import { WindowPolicies } from './gates/WindowPolicies.js';
import { parseStoredStrategy, serializeStrategy, type KindContracts, type RolloutStrategy } from './kinds/index.js';
import { EventType, type NewEvent, type RolloutKind } from './events.js';
import { checkPageSize, decodeCursor, encodeCursor, endCursorOf, pageOfRows, type Page } from '../util/pagination.js';
import { ACTIVE_ROLLOUT_STATES, canTransition, FINISHED_TARGET_STATES, isTerminal, type RolloutState, type TargetState } from './rolloutStates.js';

export interface Cause {
  actor?: string | null;
  runUrl?: string | null;
  commit?: string | null;
  message?: string | null;
}

export interface Rollout {
  id: string;
  kind: RolloutKind;
  state: RolloutState;
  fromVersion: string | null;
  /**
   * The version every target goes to; null for a rollback whose targets each go back to their own previous version
   * (its original started from several: each target's `toVersion` says which). Never a made-up text: the API renders
   * that case at its edge (ADR 0046).
   */
  toVersion: string | null;
  selector: Record<string, unknown>;
  /** The kind's typed strategy, defaults filled in (src/domain/kinds). */
  strategy: RolloutStrategy;
  cause: Cause;
  idempotencyKey: string | null;
  rollbackOfId: string | null;
  message: string | null;
  /** The engine's own bookkeeping (canary released, finish hook done); not part of the API. */
  engineState: EngineState;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /**
   * Who started it: a token's id, `anonymous` (authentication off) or `rollplane` (the engine's automatic rollback);
   * null for rollouts written before it was kept (a staged one's run still names its starter: RolloutRun.startedBy).
   */
  startedBy: string | null;
}

export interface EngineState {
  /** The rollout was paused at the end of its canary phase. */
  canaryPaused?: boolean;
  /** The canary phase is over (resumed after the canary pause): the whole strategy applies. */
  canaryPassed?: boolean;
  /** The driver's finish hook ran after the rollout ended. */
  finished?: boolean;
  /** A staged rollout paused on this wave's failure (a resume accepts it: acceptedWaves). */
  pausedWave?: string | null;
  /** The wave of a staged rollout that maintenance windows hold (a WindowClosed event was written for it). */
  windowHeld?: string | null;
  /**
   * A staged rollout under `unreachable: WAIT` with a bound: when it first found each cluster it reached UNREACHABLE
   * (ISO time by cluster), which the bound counts from.
   */
  unreachableSince?: Record<string, string>;
  /** Waves of a staged rollout whose failure a user accepted by resuming. */
  acceptedWaves?: string[];
  /** A staged rollout that failed rolls back (its failure policy said so), or not; absent: the kind's autoRollback. */
  rollBackRun?: boolean;
  /**
   * Analysis or gate between targets (ADR 0071): the last step passed or accepted (`targets:<n>`'s n); absent: none.
   * (The name is older than `strategy.gate`; a rollout has one of the two, so one count serves both.)
   */
  analysisPassed?: number;
  /** The analysis step (`targets:<n>`) that paused the rollout: a resume accepts it, a retryGate measures it again. */
  pausedAnalysis?: string | null;
  /**
   * Targets of its selection unavailable outside the rollout (skipped ones, ones that joined after the plan) that took
   * every free slot of maxUnavailable on its last admission pass: it admits nothing until they are back (waitingFor
   * says so; attack 25, F5). 0 or absent: none held it back.
   */
  downOutside?: number;
}

/** One target of a rollout: the stored row, with the domain's types for its kind and state. */
export interface RolloutTarget extends Omit<TargetRow, 'kind' | 'state' | 'updatedAt' | 'cluster'> {
  kind: RolloutKind;
  state: TargetState;
  /** The member cluster the target is in; absent: `local` (ADR 0054; the store always says). */
  cluster?: string;
}

export interface Progress {
  total: number;
  pending: number;
  progressing: number;
  succeeded: number;
  failed: number;
  skipped: number;
  cancelled: number;
  percent: number;
}

export interface NewTarget {
  /** The member cluster the target is in; absent: `local` (ADR 0054). */
  cluster?: string;
  namespace: string;
  name: string;
  fromVersion: string | null;
  toVersion: string;
  /** Set for targets that will not be changed (held, paused, already current): they start SKIPPED. */
  skipReason?: string;
  /** For a target that will be changed: how, when it matters to the caller (shown in the plan, not stored). */
  note?: string;
}

export interface NewRollout {
  kind: RolloutKind;
  fromVersion: string | null;
  /** See Rollout.toVersion. */
  toVersion: string | null;
  selector: Record<string, unknown>;
  strategy: RolloutStrategy;
  cause: Cause;
  /** The key and who sent it (its scope); unique per scope. */
  idempotencyKey?: IdempotencyKeyRef | null;
  /** With a key: the request's fingerprint, recorded with the rollout in its transaction (RolloutLauncher). */
  requestHash?: string | null;
  rollbackOfId?: string | null;
  targets: readonly NewTarget[];
  /** A staged rollout's frozen waves (issue 30), stored with it in its creating transaction. */
  run?: FrozenRun;
  /** Who starts it (see Rollout.startedBy); absent: null. */
  startedBy?: string | null;
}

export interface RolloutFilter {
  kind?: RolloutKind;
  states?: readonly RolloutState[];
  targetName?: string;
  /** Only rollouts with a target in any of these member clusters. */
  clusters?: readonly string[];
  /** Only rollouts to or from exactly this version. */
  version?: string;
  /** Only staged rollouts with a wave of this name. */
  wave?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  search?: string;
}

let lastIdTime = 0;
let idSequence = 0;

/**
 * Ids sort by creation: a time prefix, then a sequence within the millisecond (rollouts created in the same
 * millisecond keep their order; listings break createdAt ties by id), then a random suffix so that ids made by two
 * processes never collide.
 */
export function newRolloutId(now = Date.now()): string {
  if (now <= lastIdTime) {
    idSequence++;
  } else {
    lastIdTime = now;
    idSequence = 0;
  }
  return `ro_${lastIdTime.toString(36)}${idSequence.toString(36).padStart(3, '0')}${randomBytes(5).toString('hex')}`;
}

/** Reads a stored rollout row, its strategy through its kind's contract. */
type RolloutReader = (row: RolloutRow) => Rollout;

function rolloutReader(contracts: KindContracts): RolloutReader {
  return (row) => toRollout(contracts, row);
}

function toRollout(contracts: KindContracts, row: RolloutRow): Rollout {
  const kind = row.kind as RolloutKind;
  return {
    id: row.id,
    kind,
    state: row.state as RolloutState,
    fromVersion: row.fromVersion,
    toVersion: row.toVersion,
    selector: JSON.parse(row.selector) as Record<string, unknown>,
    strategy: parseStoredStrategy(contracts[kind], row.strategy),
    cause: { actor: row.causeActor, runUrl: row.causeRunUrl, commit: row.causeCommit, message: row.causeMessage },
    idempotencyKey: row.idempotencyKey,
    rollbackOfId: row.rollbackOfId,
    message: row.message,
    engineState: JSON.parse(row.engineState) as EngineState,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    startedBy: row.startedBy,
  };
}

function toTarget({ cluster, ...row }: TargetRow): RolloutTarget {
  return { ...row, ...clusterField(cluster), kind: row.kind as RolloutKind, state: row.state as TargetState };
}

interface RolloutCursor {
  t: number;
  id: string;
}
const isRolloutCursor = (v: unknown): v is RolloutCursor =>
  typeof v === 'object' && v !== null && typeof (v as RolloutCursor).t === 'number' && typeof (v as RolloutCursor).id === 'string';
const isRevisionCursor = (v: unknown): v is { n: number } => typeof v === 'object' && v !== null && typeof (v as { n: number }).n === 'number';
const isOrdinalCursor = (v: unknown): v is { o: number } => typeof v === 'object' && v !== null && typeof (v as { o: number }).o === 'number';

/**
 * Rollouts and their targets: creation (idempotent by key), queries, and every state change, each committed together
 * with its history event through the EventLog. What the engine reads and writes on every pass, and the API's listings
 * and counts, go through the history port (`store`: prepared SQL on SQLite, pg on PostgreSQL; src/store/port.ts).
 */
export class RolloutService {
  private readonly toRollout: RolloutReader;
  /** Staged rollouts' runs, waves, gates and decisions (issue 30). */
  readonly runs: StagedRuns;
  /** Maintenance-window policies, asked before a staged rollout admits a cluster (issue 30). */
  readonly windows: WindowPolicies;

  /** `contracts`: the registered kinds' (src/kinds), which read each rollout's stored strategy. */
  constructor(
    private readonly store: HistoryStore,
    private readonly log: EventLog,
    readonly contracts: KindContracts,
    /** The gate types staged runs may use: the built-ins and those the composition root adds (ADR 0068). */
    gateTypes: GateTypes = GATE_TYPES,
    /** Analysis between the targets of a rollout without waves (ADR 0071); absent: no such gates to show or retry. */
    readonly targetGates?: TargetGates,
  ) {
    this.toRollout = rolloutReader(contracts);
    this.runs = new StagedRuns(store, log, gateTypes);
    this.windows = new WindowPolicies(store);
  }

  /**
   * Creates a rollout with its targets (PENDING, or SKIPPED with a reason). With an idempotency key that already
   * produced a rollout, returns that one and `created: false` (or CONFLICT when `requestHash` tells a different request).
   *
   * With `rules` (a launch, RolloutLauncher) the decision is made in the creating transaction, under the kind's launch
   * lock, so that two replicas launching at once cannot both pass it: idempotency replay → the kind's guard → the
   * overlap rule (refused as CONFLICT, or with `supersede` the overlapping rollouts are aborted in this transaction,
   * their events committed with the new rollout's). Without `rules` nothing is checked (seeding, tests).
   */
  async create(spec: NewRollout, rules?: LaunchRules): Promise<{ rollout: Rollout; created: boolean }> {
    const toRollout = this.toRollout;
    const offersSupersede = this.contracts[spec.kind].offersSupersede === true;
    return this.log.commit<{ rollout: Rollout; created: boolean }>(function* (tx) {
      // First of the transaction's locks (lock order: historyPort.ts, HistoryTx).
      if (rules) yield* tx.lockLaunches(spec.kind);
      if (spec.idempotencyKey) {
        const existing = yield* replayStep(tx, toRollout, spec);
        if (existing) return { result: { rollout: existing, created: false }, events: [] };
      }
      const events: NewEvent[] = rules ? yield* launchRulesStep(tx, toRollout, spec, rules, offersSupersede) : [];
      const id = newRolloutId();
      const now = new Date();
      const row = yield* tx.insertRollout(
        {
          id,
          kind: spec.kind,
          fromVersion: spec.fromVersion,
          toVersion: spec.toVersion,
          selector: JSON.stringify(spec.selector),
          strategy: serializeStrategy(spec.strategy),
          causeActor: spec.cause.actor ?? null,
          causeRunUrl: spec.cause.runUrl ?? null,
          causeCommit: spec.cause.commit ?? null,
          causeMessage: spec.cause.message ?? null,
          idempotencyKey: spec.idempotencyKey?.key ?? null,
          idempotencyScope: spec.idempotencyKey?.scope ?? '',
          rollbackOfId: spec.rollbackOfId ?? null,
          startedBy: spec.startedBy ?? null,
        },
        now,
      );
      if (!row) {
        // Another writer took the key meanwhile (another kind's launch, or a create without rules, which the launch
        // lock does not serialize with this one): that rollout is the answer, and nothing of this one is written.
        const existing = (yield* replayStep(tx, toRollout, spec))!;
        if (events.length > 0) {
          // The aborts of a supersede were for a rollout that is not created: none of them may commit.
          throw new ConflictError(`idempotency key "${spec.idempotencyKey!.key}" was taken meanwhile by rollout ${existing.id}; nothing was changed`, {
            details: { rolloutId: existing.id },
          });
        }
        return { result: { rollout: existing, created: false }, events: [] };
      }
      if (spec.idempotencyKey && spec.requestHash) {
        // In the rollout's own transaction: no replica can see the rollout without the request that made it.
        yield* tx.insertIdempotencyRecord({ ...spec.idempotencyKey, operation: spec.kind, requestHash: spec.requestHash, rolloutId: id }, now);
      }
      yield* tx.insertTargets(
        spec.targets.map((target, ordinal) => ({
          id: `${id}.${ordinal}`,
          rolloutId: id,
          kind: spec.kind,
          ...clusterField(target.cluster),
          namespace: target.namespace,
          name: target.name,
          ordinal,
          state: target.skipReason ? 'SKIPPED' : 'PENDING',
          fromVersion: target.fromVersion,
          toVersion: target.toVersion,
          skipReason: target.skipReason ?? null,
          finishedAt: target.skipReason ? now : null,
        })),
        now,
      );
      if (spec.run) {
        const rows = runRows(id, spec.run, now);
        yield* tx.insertRun(rows.run, rows.waves);
      }
      events.push({
        type: EventType.RolloutStateChanged,
        rolloutId: id,
        kind: spec.kind,
        payload: { from: null, to: 'PENDING', toVersion: spec.toVersion, targets: spec.targets.length },
      });
      return { result: { rollout: toRollout(row), created: true }, events };
    });
  }

  async get(id: string): Promise<Rollout | undefined> {
    const row = await this.store.read.findRollout(id);
    return row ? this.toRollout(row) : undefined;
  }

  async require(id: string): Promise<Rollout> {
    const rollout = await this.get(id);
    if (!rollout) throw new NotFoundError(`rollout ${id} not found`, { details: { id } });
    return rollout;
  }

  async findByIdempotencyKey(key: IdempotencyKeyRef): Promise<Rollout | undefined> {
    const row = await this.store.read.findRolloutByIdempotencyKey(key);
    return row ? this.toRollout(row) : undefined;
  }

  /** Which request made the key's rollout (undefined for a key never used, or used before records were kept). */
  async idempotencyRecord(key: IdempotencyKeyRef): Promise<IdempotencyRecord | undefined> {
    return this.store.read.findIdempotencyRecord(key);
  }

  /** Targets of `kind` still to change (PENDING or PROGRESSING) in rollouts in one of `rolloutStates`. */
  async coveredTargets(kind: RolloutKind, rolloutStates: readonly RolloutState[]): Promise<CoveredTarget[]> {
    return this.store.read.coveredTargets(kind, ['PENDING', 'PROGRESSING'], rolloutStates);
  }

  /** A page of rollouts, newest first, with each one's progress (read with the page: the list shows both). */
  async list(
    filter: RolloutFilter,
    first: number | undefined,
    after: string | undefined,
  ): Promise<Page<Rollout> & { endCursor: string | null; progress: Map<string, Progress> }> {
    const size = checkPageSize(first, 50);
    const cursor = decodeCursor(after, isRolloutCursor);
    const before = cursor ? { createdAt: new Date(cursor.t), id: cursor.id } : undefined;
    const { rows, counts } = await this.store.read.listRolloutsWithCounts(filter, before, size + 1);
    const page = pageOfRows(rows, size, this.toRollout);
    const progress = progressByRollout(
      page.items.map((item) => item.id),
      counts,
    );
    return { ...page, endCursor: endCursorOf(page.items, (r) => this.cursorOf(r)), progress };
  }

  cursorOf(rollout: Rollout): string {
    return encodeCursor({ t: rollout.createdAt.getTime(), id: rollout.id });
  }

  async count(filter: RolloutFilter): Promise<number> {
    return this.store.read.countRollouts(filter);
  }

  /** Targets in admission order; `only`: those in some clusters (a staged run's wave), or to or from one version. */
  async targets(
    rolloutId: string,
    state: TargetState | undefined,
    first: number | undefined,
    after: string | undefined,
    only?: TargetsOnly,
  ): Promise<Page<RolloutTarget> & { endCursor: string | null; totalCount: number }> {
    const size = checkPageSize(first, 100);
    const cursor = decodeCursor(after, isOrdinalCursor);
    const { rows, totalCount } = await this.store.read.targetPageWithCount(rolloutId, state, cursor?.o, size + 1, only);
    const page = pageOfRows(rows, size, toTarget);
    return { ...page, endCursor: endCursorOf(page.items, (t) => encodeCursor({ o: t.ordinal })), totalCount };
  }

  targetCursor(target: RolloutTarget): string {
    return encodeCursor({ o: target.ordinal });
  }

  /**
   * Rollouts the engine still has work for: active ones, and ended ones whose finish step has not run yet (admitted
   * targets still converging, or the driver's finish hook pending).
   */
  async idsNeedingEngine(): Promise<string[]> {
    return this.store.read.rolloutIdsNeedingEngine();
  }

  /**
   * Ids of the active rollouts (PENDING, PROGRESSING, PAUSED) with a target in the member cluster, oldest first: what
   * deregistering the cluster must answer to (a CONFLICT naming them, or their targets fail naming the deregistration).
   */
  activeRolloutIdsInCluster(cluster: string): Promise<string[]> {
    return this.store.read.activeRolloutIdsInCluster(cluster);
  }

  /** The member clusters the rollout has targets in, each once (`local` included), whatever their state. */
  clustersOf(rolloutId: string): Promise<string[]> {
    return this.store.read.clustersOfRollout(rolloutId);
  }

  async allTargets(rolloutId: string): Promise<RolloutTarget[]> {
    return (await this.store.read.targetsOf(rolloutId)).map(toTarget);
  }

  async progress(rolloutId: string): Promise<Progress> {
    return progressFrom(await this.store.read.targetStateCounts(rolloutId));
  }

  /** The progress of several rollouts (a page of them) from one query. */
  async progressOf(rolloutIds: readonly string[]): Promise<Map<string, Progress>> {
    return progressByRollout(rolloutIds, await this.store.read.targetStateCountsOf(rolloutIds));
  }

  pause(id: string, reason?: string | null): Promise<Rollout> {
    return this.transition(id, 'PAUSED', reason ?? 'paused by user', ['PENDING', 'PROGRESSING']);
  }

  resume(id: string): Promise<Rollout> {
    return this.transition(id, 'PROGRESSING', 'resumed by user', ['PAUSED']);
  }

  /** Ends the rollout; targets not yet admitted become CANCELLED, admitted ones are left to finish. */
  abort(id: string, reason?: string | null): Promise<Rollout> {
    return this.transition(id, 'ABORTED', reason ?? 'aborted by user', ['PENDING', 'PROGRESSING', 'PAUSED']);
  }

  /**
   * Moves a rollout to `to` when it is in one of `allowed` (user actions) or, without `allowed`, whenever the state
   * machine permits it (engine). Refusals are CONFLICT and change nothing.
   */
  transition(id: string, to: RolloutState, message: string | null, allowed?: readonly RolloutState[]): Promise<Rollout> {
    const toRollout = this.toRollout;
    return this.log.commit(function* (tx) {
      const { rollout, events } = yield* transitionStep(tx, toRollout, id, to, message, allowed);
      return { result: rollout, events };
    });
  }

  /**
   * retryGate: the gate measures again (StagedRuns.retry). A run the gate paused (its wave's failure or hold) goes on
   * without accepting the old outcome: the pause's mark is cleared first, then the run resumes, so the engine waits on
   * the new attempt (a crash in between leaves a pause whose resume does not accept anything).
   */
  async retryGate(rolloutId: string, gateKey: string, now = new Date()): Promise<GateView> {
    const rollout = await this.get(rolloutId);
    if (!rollout) throw new NotFoundError(`rollout ${rolloutId} not found`, { details: { id: rolloutId } });
    const between = targetGateStep(gateKey) !== undefined && !(await this.runs.runOf(rolloutId));
    if (between && rollout.strategy.gate) {
      // A gate between targets of another type (`strategy.gate`): as a wave's, only an ANALYSIS gate can be retried.
      throw new ConflictError(`gate ${gateKey} is of type ${rollout.strategy.gate.type}: only an ANALYSIS gate can be retried`);
    }
    if (this.targetGates && between) {
      // An analysis between targets (ADR 0071): the same contract, and the pause it made is lifted the same way.
      const retried = await this.targetGates.retry(rollout, gateKey, now);
      if (rollout.state === 'PAUSED' && rollout.engineState.pausedAnalysis === gateKey) {
        await this.updateEngineState(rolloutId, { pausedAnalysis: null });
        await this.transition(rolloutId, 'PROGRESSING', `gate ${gateKey} retried`, ['PAUSED']);
      }
      return retried;
    }
    const gate = await this.runs.retry(rollout, gateKey, now);
    const wave = gateKey.slice(gateKey.indexOf(':') + 1);
    if (rollout.state === 'PAUSED' && rollout.engineState.pausedWave === wave) {
      await this.updateEngineState(rolloutId, { pausedWave: null });
      await this.transition(rolloutId, 'PROGRESSING', `gate ${gateKey} retried`, ['PAUSED']);
    }
    return gate;
  }

  /**
   * A member's target executor: why the rollout's targets still PROGRESSING in `cluster` (all, or only `target`) wait —
   * rollplane's last write for them there failed — as their `error`; null clears it once a write went through. Seen by
   * every replica and `rollout status` while they wait, not only at their progress deadline (attack 17, L2).
   */
  async noteWaiting(rolloutId: string, cluster: string, target: TargetRef | undefined, error: string | null): Promise<void> {
    await this.store.transaction(function* (tx) {
      yield* tx.noteWaiting(rolloutId, cluster, target, error, new Date());
    });
  }

  /** Every gate the rollout opened: a staged run's (StagedRuns.gates), then its analyses between targets (ADR 0071). */
  async gatesOf(rollout: Rollout, now: Date): Promise<GateView[]> {
    const [staged, between] = await Promise.all([this.runs.gates(rollout.id, now), this.targetGates?.gates(rollout, now) ?? []]);
    return [...staged, ...between];
  }

  /** Engine: merges `patch` into the rollout's engine bookkeeping. */
  async updateEngineState(id: string, patch: Partial<EngineState>): Promise<void> {
    await this.store.transaction(function* (tx) {
      // Locked: a read-merge-write that another replica's merge cannot overwrite.
      const row = yield* tx.lockRollout(id);
      if (!row) throw new NotFoundError(`rollout ${id} not found`, { details: { id } });
      yield* tx.updateEngineState(id, JSON.stringify({ ...(JSON.parse(row.engineState) as EngineState), ...patch }), new Date());
    });
  }

  /** Revisions of one target, newest first. */
  async revisions(kind: RolloutKind, namespace: string, name: string, first: number | undefined, after: string | undefined, cluster?: string) {
    const size = checkPageSize(first, 20);
    const cursor = decodeCursor(after, isRevisionCursor);
    const rows = await this.store.read.revisionPage(kind, namespace, name, cursor?.n, size + 1, cluster);
    const page = pageOfRows(rows, size, (r) => ({
      n: r.n,
      version: r.version,
      rolloutId: r.rolloutId,
      appliedAt: r.appliedAt,
      cursor: encodeCursor({ n: r.n }),
    }));
    return { ...page, endCursor: endCursorOf(page.items, (r) => r.cursor) };
  }

  /**
   * Engine: records a target's new state (and error) with a TargetStateChanged event. A target that SUCCEEDED gets a
   * new Revision (its first recorded revision being the version it ran before, when known).
   */
  setTargetState(rolloutId: string, target: TargetRef, to: TargetState, detail: TargetChangeDetail = {}): Promise<RolloutTarget> {
    return this.setTargetStates(rolloutId, [{ target, to, ...detail }]).then((updated) => updated[0]!);
  }

  /**
   * Several target changes of one rollout in one transaction (the engine records a whole pass at once: one commit
   * instead of one per target is what keeps a 10,000-pool rollout from being bound by SQLite commits). The targets are
   * changed and their revisions recorded in batches (HistoryTx.updateTargets, latestRevisions, insertRevisions): on
   * PostgreSQL a pass then costs a few round trips instead of several per target. A target named twice is changed
   * twice, in order (its second change goes in the next batch).
   */
  setTargetStates(rolloutId: string, changes: readonly TargetChange[]): Promise<RolloutTarget[]> {
    if (changes.length === 0) return Promise.resolve([]);
    return this.log.commit(function* (tx) {
      const results: RolloutTarget[] = [];
      const events: NewEvent[] = [];
      const now = new Date();
      for (const batch of batchesOfDistinctTargets(changes)) {
        const updates = batch.map((change) => {
          const { target, to } = change;
          const at = change.at ?? now;
          return {
            ...clusterField(target.cluster),
            namespace: target.namespace,
            name: target.name,
            state: to,
            ...(change.error !== undefined ? { error: change.error } : {}),
            ...(change.countAttempt ? { countAttempt: true } : {}),
            ...(to === 'PROGRESSING' ? { admittedAt: at } : {}),
            ...(FINISHED_TARGET_STATES.includes(to) ? { finishedAt: at } : {}),
          };
        });
        const updated = yield* tx.updateTargets(rolloutId, updates, now);
        const succeeded: { row: TargetRow; at: Date }[] = [];
        for (const [i, change] of batch.entries()) {
          const { target, to } = change;
          const outcome = updated[i];
          if (!outcome) throw new NotFoundError(`rollout ${rolloutId} has no target ${targetKey(target)}`);
          if (change.from !== undefined && outcome.previousState !== change.from) {
            // Thrown inside the transaction: it rolls back, so nothing of this batch is written.
            throw new ConflictError(
              `target ${targetKey(target)} of rollout ${rolloutId} is ${outcome.previousState}, not ${change.from} as its writer saw it: another writer moved it on`,
            );
          }
          const row = outcome.target;
          if (to === 'SUCCEEDED') succeeded.push({ row, at: change.at ?? now });
          const base = { rolloutId, kind: row.kind as RolloutKind, namespace: row.namespace, name: row.name, ...clusterField(row.cluster) };
          events.push({
            type: EventType.TargetStateChanged,
            ...base,
            payload: { from: outcome.previousState as TargetState, to, error: change.error ?? null },
          });
          if (to === 'FAILED') events.push({ type: EventType.TargetFailed, ...base, payload: { error: change.error ?? null } });
          results.push(toTarget(row));
        }
        yield* recordRevisions(tx, rolloutId, succeeded);
      }
      return { result: results, events };
    });
  }
}

export interface TargetChangeDetail {
  error?: string | null;
  countAttempt?: boolean;
  /** When it happened (the engine's clock). */
  at?: Date;
}

export interface TargetChange extends TargetChangeDetail {
  target: TargetRef;
  to: TargetState;
  /**
   * The state the writer saw the target in: the change (and every other of its call) is refused with CONFLICT when the
   * stored state is another. The engine passes its view's, so a replica that lost the lead while a pass was under way
   * (a process resumed after SIGSTOP) cannot record an outcome over what the new leader recorded since (ADR 0072).
   */
  from?: TargetState;
}

/**
 * The key's rollout, if the key has one (committed, by any replica); CONFLICT when the key's record names a different
 * request than `spec.requestHash`.
 */
function* replayStep(tx: HistoryTx, toRollout: RolloutReader, spec: NewRollout): Step<Rollout | undefined> {
  const key = spec.idempotencyKey!;
  const existing = yield* tx.findRolloutByIdempotencyKey(key);
  if (!existing) return undefined;
  if (spec.requestHash) checkReplay(key.key, spec.requestHash, existing.id, yield* tx.findIdempotencyRecord(key));
  return toRollout(existing);
}

/**
 * The kind's busy rollouts, for its guard: the active ones, newest first, every page; then those that ended (aborted,
 * failed) with admitted targets still finishing (`finishing`), which still change the cluster (attack finding: a bump
 * of another pool landed while an aborted rollout's pool was still moving). Each with the clusters it has targets in
 * (issue 29, O1: a guard about one cluster's controller judges only the rollouts in that cluster): a query per busy
 * rollout, bounded by its clusters, not its targets.
 */
function* busyRolloutsStep(tx: HistoryTx, toRollout: RolloutReader, kind: RolloutKind, finishing: readonly CoveredTarget[]): Step<BusyRollout[]> {
  const rows: RolloutRow[] = [];
  for (let before: RolloutPosition | undefined; ; ) {
    const page = yield* tx.listRollouts({ kind, states: ACTIVE_ROLLOUT_STATES }, before, ACTIVE_PAGE);
    rows.push(...page);
    const last = page[page.length - 1];
    if (page.length < ACTIVE_PAGE || !last) break;
    before = { createdAt: last.createdAt, id: last.id };
  }
  for (const id of new Set(finishing.map((t) => t.rolloutId))) {
    const row = yield* tx.findRollout(id);
    if (row) rows.push(row);
  }
  const out: BusyRollout[] = [];
  for (const row of rows) out.push({ ...toRollout(row), clusters: new Set(yield* tx.clustersOfRollout(row.id)) });
  return out;
}
const ACTIVE_PAGE = 500;

/**
 * A launch's decision, under the launch lock: the kind's guard, then the overlap rule. Returns the events of the
 * rollouts it aborted (supersede), to commit with the new rollout.
 */
function* launchRulesStep(tx: HistoryTx, toRollout: RolloutReader, spec: NewRollout, rules: LaunchRules, offersSupersede: boolean): Step<NewEvent[]> {
  const changing = spec.targets.filter((t) => !t.skipReason);
  if (changing.length === 0 && !rules.guard && !rules.takeOver) return [];
  // The original a rollback takes over covers the same targets by nature: they are the rollback's to change back.
  const overlapping = overlapsOf(yield* tx.coveredTargets(spec.kind, ['PENDING', 'PROGRESSING'], ACTIVE_ROLLOUT_STATES), changing).filter(
    (o) => o.rolloutId !== rules.takeOver,
  );
  // Targets still changing under rollouts that ended: abort and failure leave admitted targets to finish.
  const finishing = yield* tx.coveredTargets(spec.kind, ['PROGRESSING'], ENDED_WITH_ADMITTED_TARGETS);
  if (rules.guard) {
    const superseding = new Set(rules.supersede ? overlapping.map((o) => o.rolloutId) : []);
    if (rules.takeOver) superseding.add(rules.takeOver);
    rules.guard(yield* busyRolloutsStep(tx, toRollout, spec.kind, finishing), { superseding });
  }
  if (!rules.supersede) {
    // A plain launch waits for them, or its change would land on a target mid-change (attack finding F6); a rollback
    // takes over its own original's, a supersede every one it covers.
    const changingUnderEnded = overlapsOf(
      finishing.filter((t) => t.rolloutId !== spec.rollbackOfId),
      changing,
    );
    if (changingUnderEnded.length > 0) throw stillChangingConflict(changingUnderEnded);
  }
  if (overlapping.length > 0 && !rules.supersede) throw overlapConflict(offersSupersede, overlapping, spec.rollbackOfId != null);
  // Every refusal is above: from here on the launch happens, and what it aborts commits with it.
  const events: NewEvent[] = [];
  const aborts = new Map<string, string>(overlapping.map((o) => [o.rolloutId, SUPERSEDED]));
  if (rules.takeOver) aborts.set(rules.takeOver, ABORTED_FOR_ROLLBACK);
  for (const [rolloutId, message] of aborts) {
    try {
      events.push(...(yield* transitionStep(tx, toRollout, rolloutId, 'ABORTED', message, ACTIVE_ROLLOUT_STATES)).events);
    } catch (error) {
      // Ended meanwhile (the engine's transitions do not take the launch lock), or a rollback's original that had
      // ended already: nothing to abort.
      if (!(error instanceof ConflictError)) throw error;
    }
  }
  if (rules.takeOver) {
    // The rollback was planned from the original's targets before this transaction; its row is locked (or ended)
    // now, so what it changed can no longer grow: a target admitted in between would be left on the new version.
    const planned = new Set(spec.targets.map(targetKey));
    const missed = (yield* tx.targetsOf(rules.takeOver)).find((t) => changedByRollout(t) && !planned.has(targetKey(t)));
    if (missed) throw new RollbackPlanStale(`rollout ${rules.takeOver} admitted ${targetKey(missed)} while its rollback was planned`);
  }
  return events;
}

/** The ended states that may leave admitted targets to finish (SUCCEEDED and ROLLED_BACK never have any). */
const ENDED_WITH_ADMITTED_TARGETS: readonly RolloutState[] = ['ABORTED', 'FAILED'];

/**
 * Moves a rollout to `to` (see RolloutService.transition) and returns the events to commit with it. A step, so that a
 * launch can abort the rollouts it supersedes in its own transaction.
 */
function* transitionStep(
  tx: HistoryTx,
  toRollout: RolloutReader,
  id: string,
  to: RolloutState,
  message: string | null,
  allowed: readonly RolloutState[] | undefined,
): Step<{ rollout: Rollout; events: NewEvent[] }> {
  // Locked: another replica's transition of the same rollout waits, then sees this one's outcome.
  const row = yield* tx.lockRollout(id);
  if (!row) throw new NotFoundError(`rollout ${id} not found`, { details: { id } });
  const from = row.state as RolloutState;
  if ((allowed && !allowed.includes(from)) || !canTransition(from, to)) {
    throw new ConflictError(`rollout ${id} is ${from}; it cannot become ${to}`, { details: { id, state: from } });
  }
  const now = new Date();
  const updated = yield* tx.updateRolloutState(
    id,
    {
      state: to,
      message,
      ...(to === 'PROGRESSING' && !row.startedAt ? { startedAt: now } : {}),
      ...(isTerminal(to) ? { finishedAt: now } : {}),
    },
    now,
  );
  const kind = row.kind as RolloutKind;
  const events: NewEvent[] = [{ type: EventType.RolloutStateChanged, rolloutId: id, kind, payload: { from, to, message } }];
  if (to === 'ABORTED' || to === 'FAILED') {
    for (const t of yield* tx.cancelPendingTargets(id, now)) {
      events.push({
        type: EventType.TargetStateChanged,
        rolloutId: id,
        kind,
        namespace: t.namespace,
        name: t.name,
        ...clusterField(t.cluster),
        payload: { from: 'PENDING', to: 'CANCELLED', error: null },
      });
    }
  }
  return { rollout: toRollout(updated), events };
}

/** Splits changes, in order, into runs that name each target at most once (what one updateTargets call takes). */
function batchesOfDistinctTargets(changes: readonly TargetChange[]): TargetChange[][] {
  const batches: TargetChange[][] = [];
  let batch: TargetChange[] = [];
  let names = new Set<string>();
  for (const change of changes) {
    const key = targetKey(change.target);
    if (names.has(key)) {
      batches.push(batch);
      batch = [];
      names = new Set();
    }
    names.add(key);
    batch.push(change);
  }
  batches.push(batch);
  return batches;
}

/**
 * Targets that SUCCEEDED get a new revision each (a target's first recorded one being the version it ran before, when
 * known), at the time each succeeded. One read and one insert for the whole batch; its targets are distinct.
 */
function* recordRevisions(tx: HistoryTx, rolloutId: string, succeeded: readonly { row: TargetRow; at: Date }[]): Step<void> {
  if (succeeded.length === 0) return;
  const latest = yield* tx.latestRevisions(
    succeeded.map(({ row }) => ({ ...clusterField(row.cluster), kind: row.kind, namespace: row.namespace, name: row.name })),
  );
  const revisions: (NewRevision & { appliedAt: Date })[] = [];
  for (const [i, { row, at }] of succeeded.entries()) {
    const where = { ...clusterField(row.cluster), kind: row.kind, namespace: row.namespace, name: row.name, appliedAt: at };
    const last = latest[i];
    let n = last?.n ?? 0;
    if (!last && row.fromVersion) {
      n = 1;
      revisions.push({ ...where, n, version: row.fromVersion, rolloutId: null });
    }
    if (last?.version === row.toVersion) continue;
    revisions.push({ ...where, n: n + 1, version: row.toVersion, rolloutId });
  }
  if (revisions.length > 0) yield* tx.insertRevisions(revisions);
}

/** Each rollout's progress from targetStateCountsOf's answer (a rollout without targets is absent from it). */
function progressByRollout(rolloutIds: readonly string[], counts: ReadonlyMap<string, ReadonlyMap<string, number>>): Map<string, Progress> {
  return new Map(rolloutIds.map((id) => [id, progressFrom(counts.get(id) ?? new Map())]));
}

/** Counts of targets per state → a rollout's progress. */
function progressFrom(counts: ReadonlyMap<string, number>): Progress {
  const get = (state: TargetState) => counts.get(state) ?? 0;
  const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
  const finished = FINISHED_TARGET_STATES.reduce((sum, state) => sum + get(state), 0);
  return {
    total,
    pending: get('PENDING'),
    progressing: get('PROGRESSING'),
    succeeded: get('SUCCEEDED'),
    failed: get('FAILED'),
    skipped: get('SKIPPED'),
    cancelled: get('CANCELLED'),
    percent: total === 0 ? 100 : Math.round((finished / total) * 10_000) / 100,
  };
}
