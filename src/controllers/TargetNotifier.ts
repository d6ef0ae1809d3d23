import type { RolloutKind } from '../domain/events.js';

/** A target of a rollout kind (namespace `''` or absent for cluster-scoped targets such as nodes). */
export interface TargetRef {
  namespace?: string | null;
  name: string;
}

/** What the notifier listens to: an informer, or a view of one. */
export interface ObjectEvents<T> {
  addEventHandler(handler: { onAdd?(obj: T): void; onUpdate?(oldObj: T, newObj: T): void; onDelete?(obj: T): void }): void;
}

export interface TargetNotifierOptions {
  /**
   * Coalescing window: a target is notified at most once per window, however many changes it sees. Absent: every
   * notification goes out at once. A function, so the window can grow with the number of targets.
   */
  windowMs?: () => number;
}

/**
 * The one way a rollout kind tells the engine that a target changed, so the rollout that owns it is re-evaluated
 * promptly. Every notification costs the engine a pass over the rollout's targets, so a kind whose targets see bursts of
 * watch events (an agent recreation is a dozen) coalesces them with a window.
 */
export class TargetNotifier {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly kind: RolloutKind,
    private readonly send: (kind: RolloutKind, namespace: string, name: string) => void,
    private readonly options: TargetNotifierOptions = {},
  ) {}

  notify(...refs: readonly TargetRef[]): void {
    if (!this.options.windowMs) {
      for (const r of refs) this.send(this.kind, r.namespace ?? '', r.name);
      return;
    }
    for (const r of refs) this.pending.add(`${r.namespace ?? ''}/${r.name}`);
    if (!this.timer && this.pending.size > 0) {
      this.timer = setTimeout(() => this.flush(), this.options.windowMs());
      this.timer.unref();
    }
  }

  /**
   * Notifies the targets `refs` names for an object on every add and delete, and on an update that changes its
   * `signature` (every update when none is given: the kind's observation may read any of it).
   */
  watch<T>(source: ObjectEvents<T>, refs: (obj: T) => readonly TargetRef[], signature?: (obj: T) => string): void {
    source.addEventHandler({
      onAdd: (obj) => this.notify(...refs(obj)),
      onUpdate: (oldObj, newObj) => {
        if (!signature || signature(oldObj) !== signature(newObj)) this.notify(...refs(newObj));
      },
      onDelete: (obj) => this.notify(...refs(obj)),
    });
  }

  private flush(): void {
    this.timer = undefined;
    const keys = [...this.pending];
    this.pending.clear();
    for (const key of keys) {
      const slash = key.indexOf('/');
      this.send(this.kind, key.slice(0, slash), key.slice(slash + 1));
    }
  }
}
