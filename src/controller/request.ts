/** What a reconciler is asked to converge: an object's key, nothing more (level-based). */
export interface Request {
  namespace?: string;
  name: string;
}

/** The work queue key of a request: `namespace/name`, or `name` for cluster-scoped objects. */
export function keyOf(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

export function requestOf(key: string): Request {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
