import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import type { EventLog } from '../EventLog.js';
import { EventType, type NewEvent } from '../events.js';
import type { HistoryStore, WindowPolicyRow } from '../historyPort.js';
import { decide, parseWindowPolicy, policiesFor, type WindowDecision, type WindowPolicy, type WindowPolicyInput } from './maintenanceWindows.js';

/** A stored policy as the API shows it: the input it was written with, and when. */
export interface WindowPolicyView {
  name: string;
  kind: 'ALLOW' | 'DENY';
  definition: WindowPolicyInput;
  createdAt: Date;
  updatedAt: Date;
}

/** How long the engine's passes reuse the policies they read (a change through another replica applies within it). */
const POLICY_CACHE_MS = 1000;

/** The most policies kept (each is asked on every admission of every cluster it applies to). */
export const MAX_WINDOW_POLICIES = 200;

/** Cluster names one policy's WindowOpened/WindowClosed event lists at most (`clusterCount` says how many it selects). */
export const ANNOUNCED_CLUSTERS = 50;

/**
 * Named maintenance-window policies (issue 30, docs/waves.md): written through the API, each checked as a whole before
 * it is stored (maintenanceWindows.ts: a refusal names the field and changes nothing), and asked by the engine before
 * it admits a staged rollout's cluster. Read from the store on each ask, so every replica sees a change at once.
 */
export class WindowPolicies {
  /** The checked policies as last read, and when (policies() is asked on every engine pass that could admit). */
  private cached: { at: number; policies: WindowPolicy[] } | undefined;

  constructor(
    private readonly store: HistoryStore,
    private readonly now: () => number = Date.now,
  ) {}

  async list(): Promise<WindowPolicyView[]> {
    return (await this.store.read.windowPolicies()).map(viewOf);
  }

  /**
   * The checked policies (a stored one that no longer parses is skipped: it was checked when written), read again at
   * most every POLICY_CACHE_MS: a change made through another replica applies within that, one made here at once.
   */
  async policies(): Promise<WindowPolicy[]> {
    const now = this.now();
    if (this.cached && now - this.cached.at < POLICY_CACHE_MS && now >= this.cached.at) return this.cached.policies;
    const policies = (await this.store.read.windowPolicies()).flatMap((row) => {
      try {
        return [parseWindowPolicy(JSON.parse(row.definition) as WindowPolicyInput, row.name)];
      } catch {
        return [];
      }
    });
    this.cached = { at: now, policies };
    return policies;
  }

  /** Whether a cluster with these labels may take a new change at `at`, why, and until when. */
  async decide(labels: Record<string, string>, at: Date, policies?: readonly WindowPolicy[]): Promise<WindowDecision> {
    return decide(policies ?? (await this.policies()), labels, at);
  }

  /**
   * Per-policy window events (issue 30): each policy's own state now — an ALLOW policy inside one of its windows, a
   * DENY policy outside its freezes, is OPEN — for the registered clusters it selects, announced with WindowOpened or
   * WindowClosed when it differs from the state last announced (the first look announces the current state). The
   * row's compare-and-set commits with the event, so two replicas or a restart announce each change once; one event
   * per policy and change (at most MAX_WINDOW_POLICIES per change instant), never one per cluster. A policy that
   * selects no registered cluster announces nothing. Returns when the earliest policy changes next (null: none within
   * the horizon), for the caller to look again then.
   */
  async announce(clusters: readonly { name: string; labels: Record<string, string> }[], log: EventLog, now = new Date()): Promise<Date | null> {
    let next: number | null = null;
    for (const row of await this.store.read.windowPolicies()) {
      let policy: WindowPolicy;
      try {
        policy = parseWindowPolicy(JSON.parse(row.definition) as WindowPolicyInput, row.name);
      } catch {
        continue; // checked when written; one that no longer parses decides nothing either
      }
      const covered = clusters.filter((c) => policiesFor([policy], c.labels).length > 0).map((c) => c.name);
      if (covered.length === 0) continue;
      // The policy alone, for every cluster it selects (its selector is what `covered` applied).
      const own = decide([{ ...policy, selector: [] }], {}, now);
      if (own.until) next = Math.min(next ?? Infinity, own.until.getTime());
      const state = own.open ? 'OPEN' : 'CLOSED';
      if ((row.announced ?? null) === state) continue;
      const payload = {
        policy: policy.name,
        clusters: covered.slice(0, ANNOUNCED_CLUSTERS),
        clusterCount: covered.length,
        reason: `${policy.kind} window policy "${policy.name}" ${own.open ? 'opened' : 'closed'}`,
        until: own.until?.toISOString() ?? null,
      };
      const event: NewEvent = own.open ? { type: EventType.WindowOpened, payload } : { type: EventType.WindowClosed, payload };
      await log.commit(function* (tx) {
        const changed = yield* tx.announceWindow(row.name, row.announced ?? null, state);
        return { result: undefined, events: changed ? [event] : [] };
      });
    }
    return next === null ? null : new Date(next);
  }

  async create(input: WindowPolicyInput, now = new Date()): Promise<WindowPolicyView> {
    const policy = parseWindowPolicy(input, 'input');
    const row: WindowPolicyRow = { name: policy.name, kind: policy.kind, definition: JSON.stringify(definitionOf(input)), createdAt: now, updatedAt: now };
    await this.store.transaction(function* (tx) {
      if ((yield* tx.windowPolicies()).length >= MAX_WINDOW_POLICIES) throw new ValidationError('input', `at most ${MAX_WINDOW_POLICIES} window policies`);
      if (!(yield* tx.insertWindowPolicy(row))) throw new ConflictError(`a window policy named ${policy.name} exists; update it instead`);
    });
    this.cached = undefined;
    return viewOf(row);
  }

  async update(input: WindowPolicyInput, now = new Date()): Promise<WindowPolicyView> {
    const policy = parseWindowPolicy(input, 'input');
    const change = { name: policy.name, kind: policy.kind, definition: JSON.stringify(definitionOf(input)), updatedAt: now };
    const row = await this.store.transaction(function* (tx) {
      if (!(yield* tx.updateWindowPolicy(change))) throw new NotFoundError(`no window policy named ${policy.name}`);
      return (yield* tx.windowPolicies()).find((r) => r.name === policy.name)!;
    });
    this.cached = undefined;
    return viewOf(row);
  }

  async delete(name: string): Promise<WindowPolicyView> {
    const row = await this.store.transaction(function* (tx) {
      const found = (yield* tx.windowPolicies()).find((r) => r.name === name);
      if (!found || !(yield* tx.deleteWindowPolicy(name))) throw new NotFoundError(`no window policy named ${name.slice(0, 63)}`);
      return found;
    });
    this.cached = undefined;
    return viewOf(row);
  }
}

/** The input as kept: only its own fields, empty lists left out. */
function definitionOf(input: WindowPolicyInput): WindowPolicyInput {
  return {
    name: input.name,
    kind: input.kind,
    timeZone: input.timeZone?.trim() || 'UTC',
    ...(input.clusterSelector?.trim() ? { clusterSelector: input.clusterSelector.trim() } : {}),
    ...(input.weekly?.length ? { weekly: input.weekly.map((w) => ({ days: [...w.days], start: w.start, end: w.end })) } : {}),
    ...(input.cron?.length ? { cron: input.cron.map((c) => ({ schedule: c.schedule, duration: c.duration })) } : {}),
    ...(input.ranges?.length ? { ranges: input.ranges.map((r) => ({ from: r.from, to: r.to })) } : {}),
  };
}

function viewOf(row: WindowPolicyRow): WindowPolicyView {
  return {
    name: row.name,
    kind: row.kind as 'ALLOW' | 'DENY',
    definition: JSON.parse(row.definition) as WindowPolicyInput,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
