import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const SIM_CONTEXT = 'rollplane-sim';

export interface KubeconfigOptions {
  /** e.g. http://127.0.0.1:34567 */
  server: string;
  /** Where to write; default `<tmp>/rollplane-sim-XXXXXX/kubeconfig`. */
  path?: string;
  /** Bearer token the user presents; the simulator accepts any. */
  token?: string;
}

/** The kubeconfig document for a simulator at `server`. */
export function kubeconfigFor(server: string, token = 'rollplane-sim-token'): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      // client-node refuses plain http:// unless TLS verification is (pointlessly) switched off.
      { name: SIM_CONTEXT, cluster: { server, 'insecure-skip-tls-verify': true } },
    ],
    users: [{ name: SIM_CONTEXT, user: { token } }],
    contexts: [{ name: SIM_CONTEXT, context: { cluster: SIM_CONTEXT, user: SIM_CONTEXT, namespace: 'default' } }],
    'current-context': SIM_CONTEXT,
    preferences: {},
  };
}

/** Writes the kubeconfig (mode 0600) and returns its path. */
export async function writeKubeconfig(options: KubeconfigOptions): Promise<string> {
  const path = options.path ?? join(await mkdtemp(join(tmpdir(), 'rollplane-sim-')), 'kubeconfig');
  await writeFile(path, stringify(kubeconfigFor(options.server, options.token)), { mode: 0o600 });
  return path;
}

/** One simulated cluster of a kubeconfig with a context per cluster. */
export interface KubeconfigCluster {
  /** The context's, cluster entry's and user's name. */
  name: string;
  server: string;
  token?: string;
}

/**
 * One kubeconfig with a context per cluster (kubectl's `--context NAME`), each naming its own cluster and user entries
 * after the cluster; the current context is `current` (default: the first cluster).
 */
export function kubeconfigForClusters(clusters: readonly KubeconfigCluster[], current = clusters[0]?.name): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: clusters.map(({ name, server }) => ({ name, cluster: { server, 'insecure-skip-tls-verify': true } })),
    users: clusters.map(({ name, token }) => ({ name, user: { token: token ?? 'rollplane-sim-token' } })),
    contexts: clusters.map(({ name }) => ({ name, context: { cluster: name, user: name, namespace: 'default' } })),
    ...(current !== undefined ? { 'current-context': current } : {}),
    preferences: {},
  };
}
