import type { InFlightChanges, InFlightNotes } from '../domain/InFlightChanges.js';
import type { EventPayload } from '../domain/eventPayloads.js';
import type { EventType, RolloutKind } from '../domain/events.js';

/** A change in flight on one target: the rollout it is for (null: nobody's) and what the kind notes of it. */
export type Intent<T extends object> = T & { rolloutId: string | null };

/**
 * The history event that completes an intent; its object is the target, its rollout the intent's unless disowned. Its
 * payload is checked against its type's schema (eventPayloads.ts).
 */
export type OnceEvent = {
  [T in EventType]: {
    type: T;
    payload: EventPayload<T>;
    /** null: the change turned out to be nobody's (e.g. upstream replaced an agent for another image). */
    rolloutId?: null;
  };
}[EventType];

/**
 * Exactly-once history across a crash, the same way for every rollout kind (on InFlightChanges):
 * 1. `intend` commits the intent — with the rollout it is for — before the cluster write that starts the change;
 * 2. `record` appends the history event once the change is observed, and removes the intent in the same transaction.
 * A process killed anywhere in between finds the intent again after a restart (InFlightChanges.reload), so the event
 * is written once, and carries the rollout id the intent was written with: nothing about attribution lives only in
 * memory. A target has at most one intent at a time (a new one replaces it).
 */
export class RecordOnce<T extends object> {
  private readonly notes: InFlightNotes<Intent<T>>;
  /** Targets whose event is being committed: a second `record` meanwhile waits for it instead of writing another. */
  private readonly recording = new Map<string, Promise<boolean>>();

  /**
   * @param settled called once a target's intent is gone (recorded or dropped), after the commit. A driver whose
   * observation waits for the intent to go (a target is done once its change is recorded) learns of it here: no watch
   * event follows when nothing in the cluster changes with the record (beside the vm-dhcp-controller, upstream writes
   * the pool before rollplane records the recreation), and the engine would only see it at its next full observation.
   */
  constructor(
    inFlight: InFlightChanges,
    private readonly kind: RolloutKind,
    private readonly settled?: (namespace: string, name: string) => void,
  ) {
    this.notes = inFlight.of<Intent<T>>(kind);
  }

  /** The target's intent, if a change is in flight (served from memory). */
  get(namespace: string, name: string): Intent<T> | undefined {
    return this.notes.get(namespace, name);
  }

  /** The rollout the change in flight on the target is for; null when none is or it is nobody's. */
  rolloutOf(namespace: string, name: string): string | null {
    return this.get(namespace, name)?.rolloutId ?? null;
  }

  /** Commits the intent (replacing the target's previous one); call and await it before the cluster write. */
  intend(namespace: string, name: string, intent: Intent<T>): Promise<void> {
    return this.notes.put(namespace, name, intent);
  }

  /**
   * Appends the event `describe` returns for the target's intent and removes the intent, in one transaction. Resolves
   * true when this call (or one running for the same target) recorded it; false when no intent is in flight (recorded
   * already, or never intended), another replica recorded or replaced it meanwhile, or `describe` returned undefined.
   */
  record(namespace: string, name: string, describe: (intent: Intent<T>) => OnceEvent | undefined): Promise<boolean> {
    const key = `${namespace}/${name}`;
    const running = this.recording.get(key);
    if (running) return running;
    const intent = this.get(namespace, name);
    const event = intent && describe(intent);
    if (!intent || !event) return Promise.resolve(false);
    const done = this.notes
      .complete(namespace, name, [{ ...event, rolloutId: event.rolloutId === null ? null : intent.rolloutId, kind: this.kind, namespace, name }])
      .then((recorded) => {
        // Not recorded: another replica completed or replaced the intent (InFlightChanges.complete); gone here either way.
        this.settled?.(namespace, name);
        return recorded;
      })
      .finally(() => this.recording.delete(key));
    this.recording.set(key, done);
    return done;
  }

  /** Removes the intent without an event: the change it announced will not happen (nothing to record). */
  async drop(namespace: string, name: string): Promise<void> {
    if (!this.get(namespace, name)) return;
    await this.notes.complete(namespace, name, []);
    this.settled?.(namespace, name);
  }
}
