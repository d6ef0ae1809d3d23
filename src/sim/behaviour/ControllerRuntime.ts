import { performance } from 'node:perf_hooks';
import type { StoreEvent } from '../types.js';
import type { Scheduler } from './scheduler.js';

/**
 * One simulated control loop, level-based as in controller-runtime: a key names an object, and `reconcile` re-reads
 * the world and moves it one step towards the desired state. It returns a delay when it must look again later
 * (a timed transition is due), or undefined.
 */
export interface Controller {
  readonly name: string;
  /** Delay before a key enqueued by an event is processed (models controller latency); 0 for the kubelet. */
  readonly delayMs: number;
  keysFor(event: StoreEvent): Iterable<string>;
  initialKeys(): Iterable<string>;
  reconcile(key: string): number | undefined;
}

export interface RuntimeOptions {
  scheduler: Scheduler;
  onError: (controller: string, key: string, error: unknown) => void;
  /** Longest stretch of synchronous work before yielding to the event loop (keeps the API server responsive). */
  sliceMs?: number;
}

interface Item {
  controller: Controller;
  key: string;
}

/**
 * Runs controllers off one deduplicating queue. A key pending twice is processed once; a key added while it is being
 * processed is processed again afterwards. Work runs in slices on later event-loop turns, never inside a store write.
 */
export class ControllerRuntime {
  /** FIFO of distinct pending keys (an array with a moving head: a Map's deleted slots would make the head O(n)). */
  private queue: (Item & { id: string })[] = [];
  private head = 0;
  private readonly queued = new Set<string>();
  private readonly timers = new Map<string, { due: number; cancel: () => void }>();
  private readonly failures = new Map<string, number>();
  private flushing = false;
  private flushScheduled = false;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];
  private readonly sliceMs: number;

  constructor(
    private readonly controllers: Controller[],
    private readonly options: RuntimeOptions,
  ) {
    this.sliceMs = options.sliceMs ?? 10;
  }

  start(): void {
    for (const controller of this.controllers) for (const key of controller.initialKeys()) this.add(controller, key);
  }

  onEvent(event: StoreEvent): void {
    if (this.stopped) return;
    for (const controller of this.controllers) {
      for (const key of controller.keysFor(event)) {
        if (controller.delayMs > 0) this.addAfter(controller, key, controller.delayMs);
        else this.add(controller, key);
      }
    }
  }

  add(controller: Controller, key: string): void {
    if (this.stopped) return;
    const id = `${controller.name}\u0000${key}`;
    if (!this.queued.has(id)) {
      this.queued.add(id);
      this.queue.push({ id, controller, key });
    }
    this.scheduleFlush();
  }

  /** Enqueues after `ms`; an earlier timer for the same key wins, a later one is replaced. */
  addAfter(controller: Controller, key: string, ms: number): void {
    if (this.stopped) return;
    const id = `${controller.name}\u0000${key}`;
    const due = this.options.scheduler.now() + ms;
    const existing = this.timers.get(id);
    if (existing && existing.due <= due) return;
    existing?.cancel();
    const cancel = this.options.scheduler.after(ms, () => {
      this.timers.delete(id);
      this.add(controller, key);
    });
    this.timers.set(id, { due, cancel });
  }

  /** Resolves once nothing is queued or running (timers for later transitions may remain). */
  idle(): Promise<void> {
    if (this.queued.size === 0 && !this.flushing) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) timer.cancel();
    this.timers.clear();
    this.queue = [];
    this.head = 0;
    this.queued.clear();
    this.releaseIdle();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.flushing) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.stopped) return;
    this.flushing = true;
    const started = performance.now();
    try {
      while (this.head < this.queue.length) {
        const item = this.queue[this.head++]!;
        this.queued.delete(item.id);
        this.run(item.id, item);
        if (performance.now() - started > this.sliceMs) break;
      }
    } finally {
      this.flushing = false;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
    }
    if (this.queued.size > 0) this.scheduleFlush();
    else this.releaseIdle();
  }

  private run(id: string, item: Item): void {
    try {
      const again = item.controller.reconcile(item.key);
      this.failures.delete(id);
      if (again !== undefined && again <= 0) this.add(item.controller, item.key);
      else if (again !== undefined) this.addAfter(item.controller, item.key, again);
    } catch (error) {
      // A write raced with another controller or a client (409/404): level-based, so simply look again, backing off.
      const attempt = (this.failures.get(id) ?? 0) + 1;
      this.failures.set(id, attempt);
      if (attempt > 3) this.options.onError(item.controller.name, item.key, error);
      this.addAfter(item.controller, item.key, Math.min(1000, 5 * 2 ** Math.min(attempt, 8)));
    }
  }

  private releaseIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
