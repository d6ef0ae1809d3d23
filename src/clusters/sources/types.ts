import type { ClusterRegistration, ClusterSource } from '../../domain/clusters/model.js';

/** A member cluster a source found: what to register, and its kubeconfig text (held in memory only). */
export interface FoundCluster {
  registration: ClusterRegistration;
  kubeconfig: string;
}

/**
 * One place where users keep member cluster credentials. `read` lists what is there now; it throws when the place
 * itself cannot be read (then nothing of that source changes), and leaves refusing a bad entry to the caller.
 */
export interface ClusterSourceReader {
  readonly source: ClusterSource;
  read(): Promise<FoundCluster[]>;
}
