import type { KubeObject, ResourceType, WatchableStore } from '../types.js';
import { badRequest, expired } from '../store/errors.js';
import { apiVersionOf } from '../store/resources.js';
import { objectJson } from './json.js';
import type { Selector } from './selectors.js';

export interface ListQuery {
  namespace: string | undefined;
  label: Selector;
  field: Selector;
  limit: number | undefined;
  continueToken: string | undefined;
}

interface ContinueState {
  /** Revision of the first page: every page reports it, so a watch started from it misses nothing. */
  rv: number;
  /** Sort key of the last item served. */
  after: string;
}

/**
 * A List response as JSON text. Items are ordered by namespace, then name; a continue token carries the first page's
 * revision and the last key served, so pages never repeat or skip an object that exists throughout. Objects created
 * or deleted between pages may or may not show up (the real API server would serve a snapshot instead).
 * A token whose revision left the watch window answers 410 Expired, as Kubernetes does.
 */
export interface ListPage {
  items: KubeObject[];
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
}

export function listPage(store: WatchableStore, type: ResourceType, query: ListQuery): ListPage {
  let rv = store.currentRevision();
  let after: string | undefined;
  if (query.continueToken) {
    const state = decodeContinue(query.continueToken);
    if (state.rv < store.oldestResumableRevision()) {
      throw expired('The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
    }
    rv = state.rv;
    after = state.after;
  }
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 0)) throw badRequest('limit must be a non-negative integer');

  const items: { key: string; object: KubeObject }[] = [];
  for (const object of store.list(type, type.namespaced ? query.namespace : undefined)) {
    if (!query.label.matches(object) || !query.field.matches(object)) continue;
    items.push({ key: sortKey(object), object });
  }
  items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let start = 0;
  if (after !== undefined) {
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (items[mid]!.key <= after) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const limit = query.limit && query.limit > 0 ? query.limit : Infinity;
  const end = Math.min(items.length, start + limit);
  const page: ListPage = { items: items.slice(start, end).map((i) => i.object), metadata: { resourceVersion: String(rv) } };
  if (end < items.length) {
    page.metadata.continue = encodeContinue({ rv, after: items[end - 1]!.key });
    page.metadata.remainingItemCount = items.length - end;
  }
  return page;
}

/** The List JSON for a page, reusing each object's cached serialization. */
export function listJson(type: ResourceType, page: ListPage): string {
  const body = page.items.map(objectJson).join(',');
  return `{"kind":"${type.kind}List","apiVersion":"${apiVersionOf(type)}","metadata":${JSON.stringify(page.metadata)},"items":[${body}]}`;
}

function sortKey(object: KubeObject): string {
  return `${object.metadata.namespace ?? ''}\u0000${object.metadata.name}`;
}

function encodeContinue(state: ContinueState): string {
  return Buffer.from(JSON.stringify(state)).toString('base64url');
}

function decodeContinue(token: string): ContinueState {
  try {
    const state = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as ContinueState;
    if (typeof state.rv === 'number' && typeof state.after === 'string') return state;
  } catch {
    // fall through to the 400 below
  }
  throw badRequest('invalid continue token');
}
