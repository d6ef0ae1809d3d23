/**
 * Merge keys of the built-in kinds' associative lists, by field name (the Go structs' `patchMergeKey`). Shared by
 * strategic merge patch and server-side apply (which keys list items as `k:{"name":…}`). Lists not named here are
 * atomic: a patch or an apply replaces them whole.
 */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  conditions: 'type',
  imagePullSecrets: 'name',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
  addresses: 'type',
};

/** Lists of scalars merged as sets. */
const SET_LISTS = new Set(['finalizers']);

/**
 * The merge key for a list field, or undefined when the list is atomic. `ports` is keyed by containerPort in
 * containers and by port in services; the items tell which.
 */
export function mergeKeyFor(field: string, items: readonly unknown[]): string | undefined {
  if (field === 'ports') {
    const first = items.find((i) => typeof i === 'object' && i !== null) as Record<string, unknown> | undefined;
    return first && 'containerPort' in first ? 'containerPort' : 'port';
  }
  return MERGE_KEYS[field];
}

export function isSetList(field: string): boolean {
  return SET_LISTS.has(field);
}
