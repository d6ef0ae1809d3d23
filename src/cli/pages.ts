/** What the CLI reads of a connection: its nodes, whether another page follows, and its size where it has one. */
export interface ConnectionPage<N> {
  edges: { node: N }[];
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
  totalCount?: number;
}

/**
 * Reads a connection page by page, `pageSize` at a time, until its end or `limit` nodes: `read(first, after)` asks
 * for one page. Returns the nodes and the connection's totalCount (the last page's; 0 when it has none).
 */
export async function readPages<N>(
  read: (first: number, after: string | null) => Promise<ConnectionPage<N>>,
  pageSize: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<{ nodes: N[]; totalCount: number }> {
  const nodes: N[] = [];
  let totalCount = 0;
  let after: string | null = null;
  do {
    const page: ConnectionPage<N> = await read(Math.min(pageSize, limit - nodes.length), after);
    totalCount = page.totalCount ?? 0;
    nodes.push(...page.edges.map((e) => e.node));
    after = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null;
  } while (after && nodes.length < limit);
  return { nodes, totalCount };
}
