import type { IncomingMessage } from 'node:http';
import type { ApiVerb, ResourceType } from '../types.js';
import { methodNotAllowed, SimApiError } from '../store/errors.js';
import type { ResourceRegistry } from '../store/resources.js';

/** A request for a resource (or one of its subresources), as parsed from the URL. */
export interface ResourceRequest {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: URLSearchParams;
}

/**
 * Parses `/api/v1/...` and `/apis/<group>/<version>/...` path segments: 'discovery' for the group and version
 * documents, a ResourceRequest for a served resource, undefined for anything else (→ 404).
 */
export function parseApiPath(registry: ResourceRegistry, segments: string[], query: URLSearchParams): ResourceRequest | 'discovery' | undefined {
  const core = segments[0] === 'api';
  const group = core ? '' : (segments[1] ?? '');
  const version = core ? segments[1] : segments[2];
  let rest = segments.slice(core ? 2 : 3);
  if (rest.length === 0) return 'discovery';
  let namespace: string | undefined;
  // /api/v1/namespaces/<ns>/<plural>/… is namespaced; /api/v1/namespaces/<ns>[/status] is the Namespace itself.
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  // Each served version of a type has its own entry (a CRD's versions); an unserved version is not found.
  const type = registry.byGroupVersionPlural(group, version ?? '', rest[0]!);
  if (!type || rest.length > 3) return undefined;
  if (namespace !== undefined && !type.namespaced) return undefined;
  return { type, namespace, name: rest[1], subresource: rest[2], query };
}

export function verbOf(method: string, r: ResourceRequest): ApiVerb {
  const named = r.name !== undefined;
  switch (method) {
    case 'GET': {
      const watch = r.query.get('watch');
      if (watch === '1' || watch === 'true') return 'watch';
      return named ? 'get' : 'list';
    }
    case 'POST':
      if (!named) return 'create';
      break;
    case 'PUT':
      if (named) return 'update';
      break;
    case 'PATCH':
      if (named) return 'patch';
      break;
    case 'DELETE':
      if (named) return 'delete';
      break;
  }
  throw methodNotAllowed();
}

/** The media type of the request body, without parameters. */
export function contentTypeOf(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim();
}

/** The field manager Kubernetes would record: `?fieldManager`, else the User-Agent's product name. */
export function managerOf(req: IncomingMessage, query: URLSearchParams): string {
  const agent = req.headers['user-agent'];
  return query.get('fieldManager') || (agent ? agent.split('/')[0]! : 'unknown');
}

export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new SimApiError(413, 'BadRequest', 'request entity too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
