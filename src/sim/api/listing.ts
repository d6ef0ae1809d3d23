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

export interface ListPage {
  items: KubeObject[];
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
}

/**
 * One page of a List. Items are ordered by namespace, then name. A continue token carries the first page's revision
 * and the last key served; later pages show the objects as they were at that revision (rebuilt from the event
 * history), so paging is consistent under concurrent writes, as with etcd. A token whose revision left the history
 * window answers 410 Expired, as Kubernetes does.
 */
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

  const namespace = type.namespaced ? query.namespace : undefined;
  const items: { key: string; object: KubeObject }[] = [];
  const keep = (object: KubeObject): void => {
    if (query.label.matches(object) && query.field.matches(object)) items.push({ key: sortKey(object), object });
  };
  const asOf = rv < store.currentRevision() ? stateAt(store, type, namespace, rv) : undefined;
  for (const object of store.list(type, namespace)) {
    if (!asOf?.has(sortKey(object))) keep(object);
  }
  for (const object of asOf?.values() ?? []) if (object) keep(object);
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

/**
 * The objects that changed after `revision`, as they were at `revision` (undefined: did not exist then), keyed like
 * sortKey. Objects absent from the map are unchanged since.
 */
function stateAt(store: WatchableStore, type: ResourceType, namespace: string | undefined, revision: number): Map<string, KubeObject | undefined> {
  const before = new Map<string, KubeObject | undefined>();
  for (const event of store.eventsSince(revision, type)) {
    if (namespace !== undefined && event.object.metadata.namespace !== namespace) continue;
    const key = sortKey(event.object);
    // Events carry stored objects; the list shows them in the requested version.
    if (!before.has(key)) before.set(key, event.type === 'ADDED' || !event.previous ? undefined : store.viewAs(type, event.previous));
  }
  return before;
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
