import { readPayload } from '../domain/eventPayloads.js';
import { EventType } from '../domain/events.js';
import type { RolloutEvent } from './operations.js';

/** A target's new state, as `--wait` shows it. */
export interface TargetChange {
  target: string;
  state: string;
  error?: string | undefined;
}

/**
 * How a target is named on the terminal: `namespace/name`, prefixed by its member cluster outside `local`
 * (`edge-1:default/net-1`, as the domain's target keys): a rollout across clusters has the same pool name in several.
 */
export const targetLabel = (object: { namespace: string; name: string }, cluster?: string | null) => {
  const name = object.namespace ? `${object.namespace}/${object.name}` : object.name;
  return cluster && cluster !== 'local' ? `${cluster}:${name}` : name;
};

/**
 * Per-target states from the rollout's own events (TargetStateChanged: the target, `from`, `to`, `error`), which the
 * `--wait` subscription delivers in order and resumes without a gap: every change is seen, whatever the rollout's size,
 * and nothing more is read from the server.
 */
export class TargetTracker {
  private readonly inFlight = new Set<string>();
  private readonly failed = new Map<string, TargetChange>();

  private readonly last = new Map<string, string>();

  /**
   * The targets in flight when following starts (read with the rollout): they were admitted before the first event
   * the subscription delivers. Returns the ones not known yet.
   */
  seed(inFlight: readonly { cluster?: string | null; namespace: string; name: string }[]): TargetChange[] {
    return inFlight.map((object) => this.record(targetLabel(object, object.cluster), 'PROGRESSING')).filter((change) => change !== undefined);
  }

  /** The change an event reports, if it is a target's and news (a seeded target's own event is not). */
  observe(event: RolloutEvent): TargetChange | undefined {
    if (event.type !== EventType.TargetStateChanged || !event.object) return undefined;
    // Read through the payload's schema (ADR 0046), as the server's readers do.
    const { to, error } = readPayload(EventType.TargetStateChanged, event.payload);
    if (to === undefined) return undefined;
    return this.record(targetLabel(event.object, event.cluster), to, error ? error : undefined);
  }

  private record(target: string, state: string, error?: string): TargetChange | undefined {
    if (this.last.get(target) === state) return undefined;
    this.last.set(target, state);
    const change: TargetChange = { target, state, ...(error ? { error } : {}) };
    if (change.state === 'PROGRESSING') this.inFlight.add(target);
    else this.inFlight.delete(target);
    if (change.state === 'FAILED') this.failed.set(target, change);
    else this.failed.delete(target);
    return change;
  }

  /** Targets in flight now, in the order they were admitted. */
  inFlightNow(): string[] {
    return [...this.inFlight];
  }

  /** Targets that failed, with their errors, in the order they failed. */
  failures(): TargetChange[] {
    return [...this.failed.values()];
  }
}
