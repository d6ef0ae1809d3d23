import type { CoreV1Api } from '@kubernetes/client-node';
import { MemberClusterAdmin } from '../domain/clusters/MemberClusterAdmin.js';
import { ConflictError } from '../errors.js';
import type { MemberClusterRegistry } from '../domain/clusters/MemberClusterRegistry.js';
import { type KubeconfigRules, parseMemberKubeconfig } from './credentials.js';
import { type ConnectionOptions, MemberConnection } from './MemberConnection.js';
import type { MemberClusters } from './MemberClusters.js';
import type { MemberClusterSync } from './MemberClusterSync.js';
import type { MemberNetwork } from './memberNetwork.js';
import { type ApiCredentials, apiCredentialsInFile, apiCredentialsInSecrets } from './sources/apiCredentials.js';

/**
 * Where API-registered credentials are kept (docs/adr/0056-clusters-api.md): in a cluster (in-cluster mode), Secrets in
 * rollplane's namespace; else the embedded mode's credentials file when there is one; else Secrets when a namespace is
 * set (PostgreSQL outside a cluster); else nowhere, and registration says so.
 */
export function apiCredentialsFor(where: {
  inCluster: boolean;
  secretNamespace: string | undefined;
  file: string | undefined;
  core: CoreV1Api;
}): ApiCredentials | undefined {
  if (where.inCluster && where.secretNamespace) return apiCredentialsInSecrets(where.core, where.secretNamespace);
  if (where.file) return apiCredentialsInFile(where.file);
  if (where.secretNamespace) return apiCredentialsInSecrets(where.core, where.secretNamespace);
  return undefined;
}

/**
 * The API's view of the registry (MemberClusterAdmin) over the member cluster parts: the kubeconfig checks every
 * source's entries pass, the deny list, a one-off probe for `verify`, and a sync pass after each write.
 */
export function memberClusterAdmin(parts: {
  registry: MemberClusterRegistry;
  sync: MemberClusterSync;
  connections: MemberClusters;
  credentials: ApiCredentials | undefined;
  rules: KubeconfigRules;
  network: MemberNetwork;
  connectionOptions: ConnectionOptions;
  activeRolloutIds(cluster: string): Promise<readonly string[]>;
}): MemberClusterAdmin {
  return new MemberClusterAdmin({
    registry: parts.registry,
    credentials: parts.credentials?.store,
    async checkKubeconfig(kubeconfig, where) {
      const kubeConfig = parseMemberKubeconfig(kubeconfig, where, parts.rules);
      const server = kubeConfig.getCurrentCluster()!.server;
      await parts.network.checkServer(server, where);
      // One cluster under two names would be driven twice: two sets of holds, two histories of one change (attack 18, L3).
      const taken = await parts.connections.nameServing(server);
      if (taken !== undefined) {
        throw new ConflictError(
          `${where}: its server is the one member cluster "${taken}" is registered with; a cluster registered under two names would be driven twice`,
          { details: { field: where, cluster: taken } },
        );
      }
    },
    async probe(name, kubeconfig) {
      const kubeConfig = parseMemberKubeconfig(kubeconfig, 'input.kubeconfig', parts.rules);
      const connection = new MemberConnection(name, kubeConfig, parts.connectionOptions, () => {});
      try {
        return await connection.probeNow();
      } finally {
        await connection.stop();
      }
    },
    sync: () => parts.sync.syncFresh(),
    activeRolloutIds: parts.activeRolloutIds,
    size: () => parts.connections.size,
  });
}
