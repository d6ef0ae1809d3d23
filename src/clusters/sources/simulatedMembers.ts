import { isMap, type YAMLMap } from 'yaml';
import type { SimulatedMember } from '../../kubeConnection.js';
import { readCredentialsDocument, replaceCredentialsFile, yamlNode } from './credentialsFile.js';

/** Marks the entries the embedded simulator writes, so that it replaces or removes its own and never a user's. */
export const SIMULATED_MARK = { key: 'managedBy', value: 'rollplane-sim' } as const;

export interface SimulatedMembersWrite {
  /** Entries added or rewritten (their ports change at every start). */
  written: string[];
  /** Simulated entries of an earlier start that are no longer simulated. */
  removed: string[];
  /** Simulated members not written because a user's entry has their name. */
  skipped: string[];
}

/**
 * Writes the embedded mode's simulated member clusters into the credentials file as the file source reads them
 * (`clusters: [{ name, labels, kubeconfig }]`, docs/adr/0050-simulated-member-clusters.md), marked `managedBy:
 * rollplane-sim`: an entry marked so is rewritten at every start (the simulators' ports change) and removed once that
 * cluster is no longer simulated; a user's entry of the same name is kept and the simulated one skipped. The file must
 * be private already (the source refuses it otherwise); it is replaced whole (a 0600 file renamed over it), comments
 * kept, and not written at all when nothing changes. Malformed YAML is left as it is (the source reports it).
 */
export async function writeSimulatedMembers(file: string, members: readonly SimulatedMember[]): Promise<SimulatedMembersWrite> {
  const { document, clusters } = await readCredentialsDocument(file);
  const entries = clusters.items.filter((item): item is YAMLMap => isMap(item));
  const isSimulated = (entry: YAMLMap) => entry.get(SIMULATED_MARK.key) === SIMULATED_MARK.value;
  const wanted = new Map(members.map((member) => [member.name, member]));
  const result: SimulatedMembersWrite = { written: [], removed: [], skipped: [] };

  for (const entry of entries) {
    const name = String(entry.get('name'));
    if (!isSimulated(entry)) {
      if (wanted.delete(name)) result.skipped.push(name);
      continue;
    }
    const member = wanted.get(name);
    if (!member) {
      clusters.items.splice(clusters.items.indexOf(entry), 1);
      result.removed.push(name);
      continue;
    }
    wanted.delete(name);
    if (entry.get('kubeconfig') !== member.kubeconfig || JSON.stringify(entry.toJSON().labels ?? {}) !== JSON.stringify(member.labels)) {
      entry.set('labels', yamlNode({ ...member.labels }));
      entry.set('kubeconfig', member.kubeconfig);
      result.written.push(name);
    }
  }
  for (const member of wanted.values()) {
    clusters.add(yamlNode({ name: member.name, labels: { ...member.labels }, [SIMULATED_MARK.key]: SIMULATED_MARK.value, kubeconfig: member.kubeconfig }));
    result.written.push(member.name);
  }
  if (result.written.length === 0 && result.removed.length === 0) return result;
  await replaceCredentialsFile(file, document);
  return result;
}
