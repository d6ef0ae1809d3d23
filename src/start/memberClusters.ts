import { CoreV1Api } from '@kubernetes/client-node';
import type { Config } from '../config.js';
import { KIND_SERVED_RESOURCES } from '../kinds/index.js';
import { MemberClusters } from '../clusters/MemberClusters.js';
import { MemberClusterSync } from '../clusters/MemberClusterSync.js';
import { apiCredentialsFor, memberClusterAdmin } from '../clusters/clusterAdmin.js';
import { MemberNetwork } from '../clusters/memberNetwork.js';
import { credentialsFile, ensureCredentialsFile } from '../clusters/sources/credentialsFile.js';
import { capiKubeconfigSecrets, memberClusterSecrets } from '../clusters/sources/secretSources.js';
import type { ClusterSourceReader } from '../clusters/sources/types.js';
import { MemberClusterRegistry } from '../domain/clusters/MemberClusterRegistry.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { writeSimulatedMembers } from '../clusters/sources/simulatedMembers.js';
import type { KubeConnection, SimulatedMember } from '../kubeConnection.js';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import { compose } from './compose.js';
import type { History } from './history.js';

/**
 * The member clusters (docs/adr/0048-member-clusters.md): `local` registered, a connection per member with its health,
 * and the sources (labelled Secrets, Cluster API kubeconfig Secrets, the credentials file) read now and every
 * ROLLPLANE_MEMBER_CLUSTER_SYNC_MS. Nothing here is a readiness check: a member that is down is its own health state,
 * never a reason for /readyz to fail (`local`'s reachability stays the `kubernetes` check).
 */
export async function startMemberClusters(
  config: Config,
  { logger, metrics, history, kube }: { logger: Logger; metrics: AppMetrics; history: History; kube: KubeConnection },
) {
  return compose(logger, async (started) => {
    const log = logger.child({ component: 'member-clusters' });
    const settings = config.memberClusters;
    const registry = new MemberClusterRegistry(history.db.memberClusters);
    if (await registry.ensureLocal()) log.info({ cluster: LOCAL_CLUSTER }, 'member cluster registered');
    const connectionOptions = {
      qps: settings.qps,
      burst: settings.burst,
      requestTimeoutMs: settings.requestTimeoutMs,
      probeIntervalMs: settings.probeIntervalMs,
      backoffBaseMs: settings.backoffBaseMs,
      backoffMaxMs: settings.backoffMaxMs,
      waitingProbeMs: Math.min(settings.waitingProbeMs, settings.backoffMaxMs),
      versions: settings.kubeVersions,
      kindResources: KIND_SERVED_RESOURCES,
      network: new MemberNetwork({
        denyNetworks: settings.denyNetworks,
        maxDiscoveryBytes: settings.maxDiscoveryBytes,
        maxListBytes: settings.maxListBytes,
        maxWatchEventBytes: settings.maxWatchEventBytes,
      }),
    };
    const connections = started(
      new MemberClusters({
        ...connectionOptions,
        logger: log,
        registry: metrics.registry,
        recordHealth: (name, health) => registry.recordHealth(name, health),
      }),
    );
    // `local` is the operator's own connection (it may use an exec plugin or the pod's token file): trusted as given.
    const local = { kubeConfig: kube.kubeConfig, fingerprint: LOCAL_CLUSTER };
    connections.reconcile(new Map([[LOCAL_CLUSTER, local]]));
    // The Secrets are read through local's connection: its own budget and bounded requests.
    const core = connections.get(LOCAL_CLUSTER)!.kubeConfig.makeApiClient(CoreV1Api);
    const sources: ClusterSourceReader[] = [];
    if (settings.secretNamespace) sources.push(memberClusterSecrets(core, settings.secretNamespace));
    if (settings.capi !== 'off') sources.push(capiKubeconfigSecrets(core, settings.capi === 'all' ? undefined : settings.capi));
    if (settings.file) {
      await ensureCredentialsFile(settings.file);
      await registerSimulatedMembers(settings.file, kube.simulatedMembers ?? [], log);
      sources.push(credentialsFile(settings.file));
    } else if (kube.simulatedMembers?.length) {
      log.warn(
        { clusters: kube.simulatedMembers.map((m) => m.name) },
        'the simulated member clusters are not registered: there is no credentials file (ROLLPLANE_MEMBER_CLUSTERS_FILE is off, or the store is PostgreSQL)',
      );
    }
    // Clusters registered through the API (docs/adr/0056-clusters-api.md): a source like the others.
    const apiCredentials = apiCredentialsFor({ inCluster: kube.mode === 'in-cluster', secretNamespace: settings.secretNamespace, file: settings.file, core });
    if (apiCredentials) sources.push(apiCredentials.reader);
    const rules = { allowExecPlugins: settings.execPlugins };
    const sync = started(new MemberClusterSync({ registry, connections, sources, rules, local, logger: log }));
    const admin = memberClusterAdmin({
      registry,
      sync,
      connections,
      credentials: apiCredentials,
      rules,
      network: connectionOptions.network,
      connectionOptions,
      // The active rollouts with a target in the cluster (ADR 0054): deregistering it answers CONFLICT naming them.
      activeRolloutIds: (cluster) => history.db.store.read.activeRolloutIdsInCluster(cluster),
    });
    // Not awaited: the first pass reads the sources (each request bounded) while the rest of the service starts.
    sync.start(settings.syncIntervalMs).catch((error: unknown) => log.error({ err: error }, 'the member cluster sources failed to start'));
    return { registry, connections, sync, admin };
  });
}

/**
 * Puts the embedded mode's simulated members (or none) into the credentials file, and takes out those of an earlier
 * start that are gone. A file that cannot be written is logged: the service runs on with the members it has.
 */
async function registerSimulatedMembers(file: string, members: readonly SimulatedMember[], log: Logger): Promise<void> {
  try {
    const { written, removed, skipped } = await writeSimulatedMembers(file, members);
    if (written.length + removed.length > 0) log.info({ file, written, removed }, 'simulated member clusters written to the credentials file');
    if (skipped.length > 0) log.warn({ file, clusters: skipped }, 'simulated member clusters skipped: the credentials file has entries of these names');
  } catch (error) {
    log.warn({ err: error, file }, 'the simulated member clusters could not be written to the credentials file');
  }
}

export type MemberClustersPart = Awaited<ReturnType<typeof startMemberClusters>>;
