/**
 * Batches the keys asked for within one synchronous pass into one load (DataLoader's batching, without its cache).
 * graphql-js completes a list's items one after another in the same pass, so the rows of a page all ask before the
 * first microtask runs: a page of 20 rollouts asks the store once for their progress instead of 20 times.
 *
 * Deliberately no cache: a loader may live as long as a WebSocket connection's context, and a cached value would be
 * served after it changed. Keys are deduplicated within a batch only.
 */
export class BatchLoader<K, V> {
  private pending: Map<K, { resolve: (value: V) => void; reject: (error: unknown) => void }[]> | undefined;

  constructor(
    /** Loads every key at once; a key absent from the result is answered with `missing(key)` (or its error). */
    private readonly loadMany: (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>,
    private readonly missing: (key: K) => V,
  ) {}

  load(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (!this.pending) {
        this.pending = new Map();
        queueMicrotask(() => this.dispatch());
      }
      const waiting = this.pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else this.pending.set(key, [{ resolve, reject }]);
    });
  }

  private dispatch(): void {
    const batch = this.pending!;
    this.pending = undefined;
    this.loadMany([...batch.keys()]).then(
      (values) => {
        for (const [key, waiting] of batch) {
          try {
            const value = values.has(key) ? values.get(key)! : this.missing(key);
            for (const w of waiting) w.resolve(value);
          } catch (error) {
            for (const w of waiting) w.reject(error);
          }
        }
      },
      (error: unknown) => {
        for (const waiting of batch.values()) for (const w of waiting) w.reject(error);
      },
    );
  }
}

/** One loader per request context (a WeakMap: it goes with the context). */
export function perContext<C extends object, L>(create: (ctx: C) => L): (ctx: C) => L {
  const loaders = new WeakMap<C, L>();
  return (ctx) => {
    let loader = loaders.get(ctx);
    if (!loader) {
      loader = create(ctx);
      loaders.set(ctx, loader);
    }
    return loader;
  };
}
