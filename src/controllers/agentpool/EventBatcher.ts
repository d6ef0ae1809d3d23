import type { EventLog } from '../../domain/EventLog.js';
import type { NewEvent } from '../../domain/events.js';

/**
 * Appends events in batches: every event handed in within `windowMs` goes into the history in one transaction. Each
 * caller's promise resolves once its event is committed (or rejects with the batch's error), so a caller that must
 * not act before its event is durable still can wait for it — at a fraction of the commits when many pools finish
 * together.
 */
export class EventBatcher {
  private queue: { event: NewEvent; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly events: EventLog,
    private readonly windowMs = 10,
    private readonly maxBatch = 500,
  ) {}

  append(event: NewEvent): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ event, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.flush();
      else if (!this.timer) this.timer = setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    this.events.append(...batch.map((b) => b.event)).then(
      () => batch.forEach((b) => b.resolve()),
      (error: unknown) => batch.forEach((b) => b.reject(error)),
    );
  }
}
