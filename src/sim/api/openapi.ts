import { createHash } from 'node:crypto';
import type { ResourceType } from '../types.js';
import type { ResourceRegistry } from '../store/resources.js';

/**
 * Just enough OpenAPI v3 for kubectl: `kubectl apply`/`create` look up each kind's item path for a `patch` operation
 * with a `fieldValidation` parameter (then they validate server-side and never fetch /openapi/v2), and the schemas
 * carry `x-kubernetes-group-version-kind`. Built-in kinds get open schemas (any fields), as the simulator validates
 * nothing deeper for them; custom resources get their CRD's schema.
 */
function gvPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function schemaName(type: ResourceType): string {
  const group = type.group === '' ? 'core' : type.group;
  return `${group.split('.').reverse().join('.')}.${type.version}.${type.kind}`;
}

export function openApiIndex(registry: ResourceRegistry): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [group, versions] of registry.groups()) {
    for (const version of versions) {
      const doc = JSON.stringify(openApiDocument(registry, group, version));
      const hash = createHash('sha512').update(doc).digest('hex').slice(0, 32).toUpperCase();
      paths[gvPath(group, version)] = { serverRelativeURL: `/openapi/v3/${gvPath(group, version)}?hash=${hash}` };
    }
  }
  return { paths };
}

/** `gv` is the part after /openapi/v3/, e.g. "api/v1" or "apis/apps/v1". */
export function openApiForPath(registry: ResourceRegistry, gv: string): Record<string, unknown> | undefined {
  const parts = gv.split('/');
  if (parts[0] === 'api' && parts.length === 2) return openApiDocument(registry, '', parts[1]!);
  if (parts[0] === 'apis' && parts.length === 3) return openApiDocument(registry, parts[1]!, parts[2]!);
  return undefined;
}

function openApiDocument(registry: ResourceRegistry, group: string, version: string): Record<string, unknown> | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  const prefix = `/${gvPath(group, version)}`;
  const queryParams = ['fieldValidation', 'fieldManager', 'dryRun', 'force'].map((name) => ({
    name,
    in: 'query',
    schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
  }));
  for (const type of types) {
    const gvk = { group, version, kind: type.kind };
    const ref = { $ref: `#/components/schemas/${schemaName(type)}` };
    const ok = { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } };
    const op = (verb: string, action: string) => ({
      operationId: `${verb}${type.kind}`,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
      parameters: queryParams,
      responses: ok,
      ...(action === 'patch' || action === 'put' || action === 'post' ? { requestBody: { content: { 'application/json': { schema: ref } } } } : {}),
    });
    const base = type.namespaced ? `${prefix}/namespaces/{namespace}/${type.plural}` : `${prefix}/${type.plural}`;
    const pathParams = [...(type.namespaced ? [{ name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }] : [])];
    paths[base] = { parameters: pathParams, get: op('list', 'list'), post: op('create', 'post') };
    paths[`${base}/{name}`] = {
      parameters: [...pathParams, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      get: op('read', 'get'),
      put: op('replace', 'put'),
      patch: op('patch', 'patch'),
      delete: op('delete', 'delete'),
    };
    if (type.schema) {
      // A custom resource: the schema its CRD declares (kubectl explain reads it).
      schemas[schemaName(type)] = { ...type.schema, 'x-kubernetes-group-version-kind': [gvk] };
      continue;
    }
    schemas[schemaName(type)] = {
      type: 'object',
      'x-kubernetes-group-version-kind': [gvk],
      'x-kubernetes-preserve-unknown-fields': true,
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.31.0' },
    paths,
    components: { schemas },
  };
}
