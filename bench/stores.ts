/**
 * Both stores in one benchmark run (issue 15): SQLite (each run's own file, startBenchApp's default), then PostgreSQL on
 * a throwaway server (the tests' helper: initdb in a temporary directory, a free port, fsync off unless
 * `BENCH_PG_DURABLE=1`, which runs it as production does: every COMMIT waits for its WAL flush), started once for
 * the store's runs and removed after, with a fresh database per run. Which stores run is one variable per benchmark
 * (`API_BENCH_STORES`, `FEED_BENCH_STORES`; default both). PostgreSQL left out because its binaries are missing is
 * reported as skipped with the reason — unless the variable named it explicitly, which makes that an error.
 */
export type BenchStore = 'sqlite' | 'postgresql';

export const STORE_LABEL: Record<BenchStore, string> = { sqlite: 'SQLite', postgresql: 'PostgreSQL' };

/** The stores a variable names (comma-separated, in the order given); both when unset or empty. */
export function storesFrom(variable: string, env: NodeJS.ProcessEnv = process.env): { stores: BenchStore[]; explicit: boolean } {
  const raw = env[variable]?.trim();
  if (!raw) return { stores: ['sqlite', 'postgresql'], explicit: false };
  const stores = raw.split(',').map((s) => s.trim().toLowerCase());
  for (const store of stores) {
    if (store !== 'sqlite' && store !== 'postgresql') throw new Error(`${variable}: unknown store "${store}" (known: sqlite, postgresql)`);
  }
  return { stores: [...new Set(stores)] as BenchStore[], explicit: true };
}

export interface StoreRuns<T> {
  runs: { store: BenchStore; result: T }[];
  /** Why PostgreSQL was not measured, when it was left out. */
  skipped?: string;
}

/**
 * Calls `body` once per store, in order. `databaseEnv()` gives the service's environment for a fresh database of that
 * store: nothing for SQLite (startBenchApp puts a file in the run's directory), `DATABASE_URL` of a new, empty
 * PostgreSQL database otherwise (call it once per service started).
 */
export async function forEachStore<T>(
  variable: string,
  body: (store: BenchStore, databaseEnv: () => Promise<Record<string, string>>) => Promise<T>,
): Promise<StoreRuns<T>> {
  const { stores, explicit } = storesFrom(variable);
  // startBenchApp's default database would follow it, and a "SQLite" run would measure that database instead.
  if (process.env.BENCH_DATABASE_URL) throw new Error(`unset BENCH_DATABASE_URL: this benchmark starts its own databases (${variable} picks the stores)`);
  const out: StoreRuns<T> = { runs: [] };
  for (const store of stores) {
    if (store === 'sqlite') {
      out.runs.push({ store, result: await body(store, async () => ({})) });
      continue;
    }
    // The tests' helper, imported only here: a SQLite-only run never loads it.
    const { findPostgresBinaries, startPostgres } = await import('../test/helpers/postgres.js');
    const binaries = findPostgresBinaries();
    if (!binaries) {
      const reason = 'no PostgreSQL binaries (initdb, pg_ctl, postgres) in PATH, /usr/local/bin or /usr/lib/postgresql/*/bin';
      if (explicit) throw new Error(`${variable} names postgresql, but there are ${reason}`);
      process.stdout.write(`PostgreSQL skipped: ${reason} (install Debian's postgresql package to measure it)\n`);
      out.skipped = reason;
      continue;
    }
    const server = await startPostgres(binaries, { durable: process.env.BENCH_PG_DURABLE === '1' });
    let databases = 0;
    try {
      out.runs.push({ store, result: await body(store, async () => ({ DATABASE_URL: await server.createDatabase(`rollplane_bench_${++databases}`) })) });
    } finally {
      await server.stop();
    }
  }
  return out;
}

/** `b ÷ a` to three decimals; null when either is missing or a is 0. */
export function ratioOf(b: number | null | undefined, a: number | null | undefined): number | null {
  if (a === null || a === undefined || b === null || b === undefined || a === 0) return null;
  return Math.round((b / a) * 1000) / 1000;
}
