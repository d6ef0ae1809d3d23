import type { MemberClusterRegistry, RefusedRegistration } from '../domain/clusters/MemberClusterRegistry.js';
import { type ClusterRegistration, type ClusterSource, LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { Logger } from '../log.js';
import { CredentialError, type KubeconfigRules, parseMemberKubeconfig } from './credentials.js';
import { fingerprintOf, type MemberClusters, type MemberCredentials } from './MemberClusters.js';
import type { ClusterSourceReader, FoundCluster } from './sources/types.js';

interface Held {
  registration: ClusterRegistration;
  credentials: MemberCredentials;
}

/** What one pass found, per source: refused entries (with the reason, never a credential) and unreadable sources. */
export interface SyncPass {
  refused: RefusedRegistration[];
  /** Sources that could not be read this time (their clusters stay as they were), with the reason. */
  unreadable: { source: ClusterSource; reason: string }[];
}

/**
 * Reads every source, registers what it found (MemberClusterRegistry.sync) and hands the connections their
 * credentials (MemberClusters.reconcile), every `intervalMs` and on `syncNow`. Credentials live here, in memory, next
 * to the connections: never in the store, a log line or an error. Bad input changes nothing: an entry whose kubeconfig
 * is refused keeps the registration and credentials it had (if any), and a source that cannot be read keeps all of
 * its clusters until it can.
 */
export class MemberClusterSync {
  private readonly held = new Map<ClusterSource, Map<string, Held>>();
  private running: Promise<SyncPass> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private refusalsSaid = new Set<string>();

  constructor(
    private readonly options: {
      registry: MemberClusterRegistry;
      connections: MemberClusters;
      sources: readonly ClusterSourceReader[];
      rules: KubeconfigRules;
      /** `local`'s credentials: always connected, never a source's. */
      local: MemberCredentials;
      logger: Logger;
    },
  ) {}

  /** Syncs now, then every `intervalMs`. */
  async start(intervalMs: number): Promise<SyncPass> {
    const first = await this.syncNow();
    if (this.stopped) return first;
    this.timer = setInterval(() => void this.syncNow(), intervalMs);
    this.timer.unref();
    return first;
  }

  /** One pass (a pass asked for while one runs runs once after it). */
  syncNow(): Promise<SyncPass> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.syncNow();
      }
    });
    return this.running;
  }

  /**
   * A pass that starts after this call (a pass running now may have read the sources before a write the caller just
   * made: the API's registration waits for one that reads it).
   */
  async syncFresh(): Promise<SyncPass> {
    if (this.running) {
      this.again = true;
      await this.running.catch(() => {});
      if (this.running) return this.running;
    }
    return this.syncNow();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running?.catch(() => {});
  }

  private async pass(): Promise<SyncPass> {
    const result: SyncPass = { refused: [], unreadable: [] };
    /** Servers of this pass's new or changed entries, in every source, not connected yet. */
    const arriving = new Map<string, string>();
    for (const reader of this.options.sources) {
      if (this.stopped) break;
      try {
        result.refused.push(...(await this.syncSource(reader, arriving)));
      } catch (error) {
        const reason = (error as Error).message;
        result.unreadable.push({ source: reader.source, reason });
        this.options.logger.warn({ source: reader.source, reason }, 'a member cluster source could not be read; its clusters stay as they were');
      }
    }
    // Said once, not every pass: a Secret that stays bad would fill the log every ROLLPLANE_MEMBER_CLUSTER_SYNC_MS.
    const said = new Set<string>();
    for (const refused of result.refused) {
      const key = `${refused.sourceRef}\0${refused.reason}`;
      said.add(key);
      if (this.refusalsSaid.has(key)) continue;
      this.options.logger.warn({ cluster: refused.name, sourceRef: refused.sourceRef, reason: refused.reason }, 'member cluster registration refused');
    }
    this.refusalsSaid = said;
    if (!this.stopped) this.options.connections.reconcile(this.desired());
    return result;
  }

  private async syncSource(reader: ClusterSourceReader, arriving: Map<string, string>): Promise<RefusedRegistration[]> {
    const found = await reader.read();
    const before = this.held.get(reader.source) ?? new Map<string, Held>();
    const next = new Map<string, Held>();
    const refused: RefusedRegistration[] = [];
    for (const { registration, kubeconfig } of claimsInOrder(found, before)) {
      const claimed = next.get(registration.name);
      if (claimed || registration.name === LOCAL_CLUSTER) {
        // Two entries of one source naming one cluster (two Secrets with one cluster-name annotation): the one that
        // holds the name keeps it, whatever the order of a listing; the other is refused and said so (attack 13, F6).
        const holder = claimed ? claimed.registration.sourceRef : 'the cluster rollplane runs in (it cannot be registered)';
        refused.push({
          name: registration.name,
          sourceRef: registration.sourceRef,
          reason: `${registration.sourceRef}: the name "${registration.name}" is taken by ${holder}`,
        });
        continue;
      }
      try {
        const kubeConfig = parseMemberKubeconfig(kubeconfig, registration.sourceRef, this.options.rules);
        const fingerprint = fingerprintOf(kubeconfig);
        const server = kubeConfig.getCurrentCluster()?.server;
        // New or changed credentials only: an entry whose API server another name already reaches is refused, as the
        // API refuses it (attack 20, F6: the file and Secret sources registered one cluster under two names).
        if (server !== undefined && before.get(registration.name)?.credentials.fingerprint !== fingerprint) {
          const taken = await this.options.connections.nameServing(server, { except: registration.name, also: arriving });
          if (taken !== undefined) {
            refused.push({
              name: registration.name,
              sourceRef: registration.sourceRef,
              reason: `${registration.sourceRef}: its API server is the one of member cluster "${taken}", already registered; one cluster under two names would be driven twice`,
            });
            const kept = before.get(registration.name);
            if (kept && kept.registration.sourceRef === registration.sourceRef) next.set(registration.name, kept);
            continue;
          }
          arriving.set(registration.name, server);
        }
        next.set(registration.name, { registration, credentials: { kubeConfig, fingerprint } });
      } catch (error) {
        // Any failure to read one entry refuses that entry only: one bad Secret must not freeze its whole source (a
        // deleted Secret's credentials would stay in use: attack 13, F3). Only a CredentialError's message is known to
        // carry no part of the kubeconfig.
        const reason = error instanceof CredentialError ? error.message : `${registration.sourceRef}: the kubeconfig could not be read`;
        refused.push({ name: registration.name, sourceRef: registration.sourceRef, reason });
        const kept = before.get(registration.name);
        if (kept && kept.registration.sourceRef === registration.sourceRef) next.set(registration.name, kept);
      }
    }
    const report = await this.options.registry.sync(
      reader.source,
      [...next.values()].map((held) => held.registration),
    );
    refused.push(...report.refused);
    // A registration the registry refused (bad name or labels, a name another source holds) gets no connection, unless
    // the cluster it names was this source's already (then the registry kept its row).
    for (const { name } of report.refused) {
      const kept = before.get(name);
      if (kept) next.set(name, kept);
      else next.delete(name);
    }
    for (const name of report.removed) next.delete(name);
    this.held.set(reader.source, next);
    for (const name of report.created) this.options.logger.info({ cluster: name, source: reader.source }, 'member cluster registered');
    for (const name of report.removed) this.options.logger.info({ cluster: name, source: reader.source }, 'member cluster deregistered');
    return refused;
  }

  private desired(): Map<string, MemberCredentials> {
    const desired = new Map<string, MemberCredentials>([[LOCAL_CLUSTER, this.options.local]]);
    for (const held of this.held.values()) for (const [name, { credentials }] of held) if (!desired.has(name)) desired.set(name, credentials);
    return desired;
  }
}

/**
 * A source's entries with the entry that held each name last pass first, so that it keeps the name: a new Secret
 * whose name sorts first must not take over a registered cluster by claiming the same name.
 */
function claimsInOrder(found: readonly FoundCluster[], before: ReadonlyMap<string, Held>): FoundCluster[] {
  const holds = (entry: FoundCluster) => before.get(entry.registration.name)?.registration.sourceRef === entry.registration.sourceRef;
  return [...found.filter(holds), ...found.filter((entry) => !holds(entry))];
}
