import type { StoredEvent } from './events.js';

/**
 * Publishes events that are already committed to the store. In-process by default; a multi-replica deployment swaps in
 * a PostgreSQL LISTEN/NOTIFY or Redis implementation of the same interface. Subscribers must not throw and must be
 * fast (they only buffer); the bus calls them synchronously in publish order.
 */
export interface EventBus {
  publish(event: StoredEvent): void;
  subscribe(listener: (event: StoredEvent) => void): () => void;
  /** Number of current subscribers (a gauge for /metrics). */
  subscriberCount(): number;
}

export class InProcessEventBus implements EventBus {
  private readonly listeners = new Set<(event: StoredEvent) => void>();

  publish(event: StoredEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  subscriberCount(): number {
    return this.listeners.size;
  }
}
