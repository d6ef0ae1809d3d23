import { endCursorOf, type Edge, type KeyedPage, type Page } from '../../util/pagination.js';

/** A GraphQL connection: its edges and pageInfo, and totalCount where the type has one. */
export interface GraphQLConnection<T> {
  edges: Edge<T>[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount?: number;
}

/** The connection of a page whose items carry their cursors (pageByKey's, the rollout service's). */
export function connectionOf<T>(page: KeyedPage<T>): GraphQLConnection<T> & { totalCount: number };
export function connectionOf<T>(page: Omit<KeyedPage<T>, 'totalCount'>): GraphQLConnection<T>;
export function connectionOf<T>(page: Omit<KeyedPage<T>, 'totalCount'> & { totalCount?: number }): GraphQLConnection<T> {
  return {
    edges: page.items,
    pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor },
    ...(page.totalCount === undefined ? {} : { totalCount: page.totalCount }),
  };
}

/**
 * The connection of a page of plain items: `edgeOf` gives each its cursor (and maps the node); `emptyEndCursor` is
 * the endCursor of an empty page (event pages keep the caller's `after`, so that a reader at the end keeps its place).
 */
export function connectionOfItems<T, N>(page: Page<T>, edgeOf: (item: T) => Edge<N>, emptyEndCursor: string | null = null): GraphQLConnection<N> {
  const edges = page.items.map(edgeOf);
  return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: endCursorOf(edges, (edge) => edge.cursor) ?? emptyEndCursor } };
}
