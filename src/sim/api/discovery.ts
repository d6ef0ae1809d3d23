import { createHash } from 'node:crypto';
import type { ResourceType } from '../types.js';
import { apiVersionOf, type ResourceRegistry } from '../store/resources.js';

/** The Kubernetes version the simulator claims; kubectl warns beyond ±1 minor of its own, nothing more. */
export const SIM_VERSION = { major: '1', minor: '31', gitVersion: 'v1.31.0-rollplane-sim' };

const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

export function versionInfo(): Record<string, string> {
  return {
    ...SIM_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.22.0',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** `versions` come highest priority first (ResourceRegistry.groups), so the first is the preferred version. */
function groupEntry(name: string, versions: string[]): Record<string, unknown> {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: list, preferredVersion: list[0] };
}

export function apiGroupList(registry: ResourceRegistry): Record<string, unknown> {
  const groups = [...registry.groups()].filter(([group]) => group !== '').map(([group, versions]) => groupEntry(group, versions));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroup(registry: ResourceRegistry, group: string): Record<string, unknown> | undefined {
  const versions = registry.groups().get(group);
  if (!versions || group === '') return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(group, versions) };
}

function singular(type: ResourceType): string {
  return type.singular ?? type.kind.toLowerCase();
}

export function apiResourceList(registry: ResourceRegistry, group: string, version: string): Record<string, unknown> | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const type of types) {
    const entry: Record<string, unknown> = {
      name: type.plural,
      singularName: singular(type),
      namespaced: type.namespaced,
      kind: type.kind,
      verbs: VERBS,
      // The storage version's: every served version of a CRD stores into the same place.
      storageVersionHash: createHash('sha256')
        .update(`${apiVersionOf(type.storageVersion ? { ...type, version: type.storageVersion } : type)}/${type.plural}`)
        .digest('base64')
        .slice(0, 11),
    };
    if (type.shortNames?.length) entry.shortNames = type.shortNames;
    if (type.categories?.length) entry.categories = type.categories;
    resources.push(entry);
    for (const sub of type.subresources) {
      const verbs = sub === 'log' ? ['get'] : ['get', 'patch', 'update'];
      const entry: Record<string, unknown> = { name: `${type.plural}/${sub}`, singularName: '', namespaced: type.namespaced, kind: type.kind, verbs };
      if (sub === 'scale') Object.assign(entry, { kind: 'Scale', group: 'autoscaling', version: 'v1' });
      resources.push(entry);
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}
