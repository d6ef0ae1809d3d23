import { createHash } from 'node:crypto';

/** Labels, annotations and names shared by the agent-pool reconcilers (spec/agent-pools.md). */
export const IPPOOL_GROUP = 'network.harvesterhci.io';
export const IPPOOL_VERSION = 'v1alpha1';
export const IPPOOL_PLURAL = 'ippools';
export const NAD_GROUP = 'k8s.cni.cncf.io';
export const NAD_VERSION = 'v1';
export const NAD_PLURAL = 'network-attachment-definitions';

export const LABEL_AGENT = 'network.harvesterhci.io/vm-dhcp-controller';
export const LABEL_AGENT_VALUE = 'agent';
export const LABEL_POOL_NAMESPACE = 'network.harvesterhci.io/ippool-namespace';
export const LABEL_POOL_NAME = 'network.harvesterhci.io/ippool-name';
export const LABEL_CLUSTER_NETWORK = 'network.harvesterhci.io/clusternetwork';
export const ANNOTATION_HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
export const ANNOTATION_MULTUS = 'k8s.v1.cni.cncf.io/networks';
/**
 * Beside the hold annotation: the hold is rollplane's (the rollout that put it there), so rollplane may release it. A
 * hold without it is someone else's and stays.
 */
export const ANNOTATION_HELD_BY = 'rollplane.io/held-for-rollout';
/** The value rollplane writes into the hold annotation (upstream reads presence only). */
export const ROLLPLANE_HOLD_VALUE = 'true';

/**
 * Whose hold a pool carries: rollplane's only while both its marker and its own hold value are there. An operator
 * who puts a hold of their own over rollplane's (`kubectl annotate --overwrite` with any other value) makes it
 * theirs: rollplane then never takes it off.
 */
export function holdOf(annotations: Readonly<Record<string, string>> | undefined): 'none' | 'rollplane' | 'other' {
  const hold = annotations?.[ANNOTATION_HOLD];
  if (hold === undefined) return 'none';
  return annotations?.[ANNOTATION_HELD_BY] !== undefined && hold === ROLLPLANE_HOLD_VALUE ? 'rollplane' : 'other';
}

/** The rollout whose hold of rollplane's a pool carries (holdOf says `rollplane`); undefined for no hold or another's. */
export function rollplaneHolder(annotations: Readonly<Record<string, string>> | undefined): string | undefined {
  return holdOf(annotations) === 'rollplane' ? annotations![ANNOTATION_HELD_BY] : undefined;
}

export const AGENT_CONTAINER = 'agent';
export const AGENT_PORT = 8080;

/**
 * The agent's name, by upstream's rule (vm-dhcp-controller's SafeAgentConcatName): `<ns>-<name>-agent` when
 * `<ns>-<name>` is shorter than 58 characters. Otherwise it is cut: to 51 characters plus the first 5 hex digits of
 * its sha256 when the 51st character is a lowercase letter or a digit, else to 50 characters plus 6 digits (so the
 * cut never leaves a `-` or `.` before the digest). Then `-agent`. Always at most 63 characters, and the same name the
 * upstream controller gives, which matters because both look for the agent by it.
 */
export function agentName(poolNamespace: string, poolName: string): string {
  const base = `${poolNamespace}-${poolName}`;
  if (base.length < 58) return `${base}-agent`;
  const digest = createHash('sha256').update(base).digest('hex');
  const cut = base[50]!;
  return /[a-z0-9]/.test(cut) ? `${base.slice(0, 51)}-${digest.slice(0, 5)}-agent` : `${base.slice(0, 50)}-${digest.slice(0, 6)}-agent`;
}

export function poolKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * `<nadNamespace>/<nadName>` → its parts, split at the last `/` as upstream does (kv.RSplit); a bare name is in the
 * pool's namespace.
 */
export function splitNetworkName(networkName: string, poolNamespace: string): { namespace: string; name: string } {
  const slash = networkName.lastIndexOf('/');
  return slash < 0 ? { namespace: poolNamespace, name: networkName } : { namespace: networkName.slice(0, slash), name: networkName.slice(slash + 1) };
}
