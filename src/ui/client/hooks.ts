import { createContext, useCallback, useContext, useEffect, useState, useSyncExternalStore } from 'react';
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { describeError, gql } from './api.js';
import type { LiveConnection } from './live.js';
import type { LiveStream } from './liveStream.js';
import type { LiveSnapshot, LiveStore } from './LiveStore.js';
import type { PageInfo } from './types.js';

export interface LiveContextValue {
  store: LiveStore;
  connection: LiveConnection;
}

export const LiveContext = createContext<LiveContextValue | null>(null);

function useLiveContext(): LiveContextValue {
  const value = useContext(LiveContext);
  if (!value) throw new Error('LiveContext is not provided');
  return value;
}

export function useLive(): LiveSnapshot {
  const { store } = useLiveContext();
  return useSyncExternalStore(store.subscribe, store.snapshot);
}

const NO_ITEMS: readonly never[] = [];

/** The items a kind's live stream kept for its charts (LiveStream.series), oldest first. */
export function useLiveSeries<T>(stream: LiveStream<T>): readonly T[] {
  // The store keeps exactly the items this stream delivered under its key (LiveStore.addToSeries).
  return (useLive().series.get(stream.key) ?? NO_ITEMS) as readonly T[];
}

export function useLiveStore(): LiveStore {
  return useLiveContext().store;
}

/** The page's one WebSocket connection, for a view's own resumable subscription (LiveConnection.subscribe). */
export function useLiveConnection(): LiveConnection {
  return useLiveContext().connection;
}

export interface QueryState<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs a query when its variables change (compared as JSON), and every `pollMs` while mounted. The last good data
 * stays visible during a reload and after a failed poll.
 */
export function useQuery<T, TVariables>(
  query: DocumentTypeDecoration<T, TVariables>,
  variables: TVariables,
  options: { pollMs?: number; skip?: boolean } = {},
): QueryState<T> {
  const key = JSON.stringify(variables);
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean; key: string }>({
    data: undefined,
    error: undefined,
    loading: !options.skip,
    key,
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` (the variables' JSON) stands for `variables`, a new object on every render, and `tick` is the reload trigger.
  useEffect(() => {
    if (options.skip) return undefined;
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true, ...(s.key !== key ? { data: undefined, key } : {}) }));
    // The effect re-runs when the variables' JSON (key) changes, so these are the variables that key stands for.
    gql(query, variables, controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: undefined, loading: false, key }),
      (error: unknown) => !controller.signal.aborted && setState((s) => ({ ...s, error, loading: false, key })),
    );
    return () => controller.abort();
  }, [query, key, tick, options.skip]);

  useEffect(() => {
    if (!options.pollMs || options.skip) return undefined;
    const timer = setInterval(reload, options.pollMs);
    return () => clearInterval(timer);
  }, [options.pollMs, options.skip, reload]);

  return { data: state.key === key ? state.data : undefined, error: state.error, loading: state.loading, reload };
}

/** Cursor pagination for a connection field: a stack of `after` cursors so that "Previous" works too. */
export function useCursorPages(resetKey: string): {
  after: string | null;
  page: number;
  next: (pageInfo: PageInfo) => void;
  previous: () => void;
} {
  // Pages restart at the first one whenever the filter (resetKey) changes.
  const [state, setState] = useState<{ key: string; stack: (string | null)[] }>({ key: resetKey, stack: [null] });
  const stack = state.key === resetKey ? state.stack : [null];
  return {
    after: stack[stack.length - 1] ?? null,
    page: stack.length,
    next: (pageInfo) => {
      if (pageInfo.hasNextPage && pageInfo.endCursor) setState({ key: resetKey, stack: [...stack, pageInfo.endCursor] });
    },
    previous: () => setState({ key: resetKey, stack: stack.length > 1 ? stack.slice(0, -1) : stack }),
  };
}

/** The hash route, e.g. `#/rollouts/ro_1` → `['rollouts', 'ro_1']`. */
function readHashRoute(): string[] {
  return location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/').filter(Boolean).map(decodeURIComponent);
}

export function useHashRoute(): string[] {
  const [route, setRoute] = useState(readHashRoute);
  useEffect(() => {
    const onChange = () => setRoute(readHashRoute());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** Debounces a fast-changing value (search boxes). */
export function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

/** The latest value, passed on at most once per `ms` (trailing edge included). */
export function useThrottled<T>(value: T, ms: number): T {
  const [throttled, setThrottled] = useState(value);
  const [lastAt, setLastAt] = useState(0);
  useEffect(() => {
    const wait = Math.max(0, lastAt + ms - Date.now());
    const timer = setTimeout(() => {
      setThrottled(value);
      setLastAt(Date.now());
    }, wait);
    return () => clearTimeout(timer);
  }, [value, ms, lastAt]);
  return throttled;
}

export interface Action {
  busy: boolean;
  /** The last failure, described with its code and prefixed (`Not created: … (BAD_USER_INPUT)`); null after a success. */
  error: string | null;
  /** Runs `work` unless one is running; true when it succeeded. */
  run: (work: () => Promise<void>, failurePrefix?: string) => Promise<boolean>;
  /** Shows a failure found before any request (a form's own check). */
  fail: (message: string) => void;
}

/** A mutation run from a control: busy while it runs (the control disabled), its failure kept to show next to it. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<void>, failurePrefix = '') => {
    setBusy(true);
    setError(null);
    try {
      await work();
      return true;
    } catch (e) {
      setError(`${failurePrefix}${describeError(e)}`);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, fail: setError };
}
