import { clusterField } from '../domain/ports.js';
import type { EventFilter, EventType, NewEventOf, RolloutKind, StoredEvent } from '../domain/events.js';
import type { ControllerHost } from './host.js';
import { clusterInformers, type ClusterInformers } from './informers.js';
import { RecordOnce } from './RecordOnce.js';
import { TargetNotifier, type TargetNotifierOptions } from './TargetNotifier.js';

/** An event a kind records, its payload checked against its type's schema: its `kind` is the kind's own, filled in. */
export type KindEvent = { [T in EventType]: Omit<NewEventOf<T>, 'kind'> }[EventType];

/**
 * The one way a rollout kind writes history: events appended with the kind filled in, and changes recorded exactly once
 * across restarts (`once`, see RecordOnce).
 */
export class KindEvents {
  constructor(
    private readonly host: {
      events: Pick<ControllerHost['events'], 'append' | 'listBefore'>;
      inFlight: ControllerHost['inFlight'];
      cluster?: string | undefined;
    },
    readonly kind: RolloutKind,
  ) {}

  /** Appended with the kind, and (outside `local`) the host's member cluster unless the event names one. */
  async append(event: KindEvent): Promise<StoredEvent> {
    const cluster = event.cluster === undefined ? clusterField(this.host.cluster) : {};
    const [stored] = await this.host.events.append({ ...event, ...cluster, kind: this.kind });
    return stored!;
  }

  /**
   * The kind's events, newest first, before `beforeId` (all when undefined), of the host's cluster only: a member's
   * host names its cluster, `local`'s names none, which reads `local` for a read about one object (ADR 0060).
   */
  listBefore(filter: Omit<EventFilter, 'kind'>, beforeId: number | undefined, limit: number): Promise<StoredEvent[]> {
    return this.host.events.listBefore({ ...filter, ...clusterField(this.host.cluster), kind: this.kind }, beforeId, limit);
  }

  /**
   * The kind's in-flight changes whose event is recorded once (one per kind: they share the kind's notes). `settled`:
   * told of each target whose intent is gone (see RecordOnce).
   */
  once<T extends object>(settled?: (namespace: string, name: string) => void): RecordOnce<T> {
    return new RecordOnce<T>(this.host.inFlight, this.kind, settled);
  }
}

/**
 * What a rollout kind's `setup` gets: the ControllerHost, plus the three things every kind does the same way — build
 * informers (`informers`), tell the engine a target changed (`notifier`), record history (`history`).
 */
export interface KindHost extends ControllerHost {
  readonly kind: RolloutKind;
  readonly informers: ClusterInformers;
  readonly history: KindEvents;
  notifier(options?: TargetNotifierOptions): TargetNotifier;
}

export function kindHost(host: ControllerHost, kind: RolloutKind): KindHost {
  return Object.assign(Object.create(host) as ControllerHost, {
    kind,
    informers: clusterInformers(host),
    history: new KindEvents(host, kind),
    notifier: (options?: TargetNotifierOptions) => new TargetNotifier(kind, (k, namespace, name) => host.notifyTargetChanged(k, namespace, name), options),
  });
}
