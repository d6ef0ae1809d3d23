import { AppError, ConflictError, ErrorCode, NotFoundError, ValidationError } from '../../errors.js';
import { matchesLabelSelector, parseLabelSelector } from '../labelSelector.js';
import { type MemberClusterRegistry, validateClusterLabels, validateClusterName } from './MemberClusterRegistry.js';
import { type ClusterHealth, LOCAL_CLUSTER, type MemberClusterRecord } from './model.js';

/** Labels under this prefix are rollplane's to set (a CAPI cluster's namespace): no caller gives them. */
const RESERVED_LABEL_PREFIX = 'rollplane.io/';

/** A cluster registered through the API, as its credential store keeps it. */
export interface ApiClusterEntry {
  name: string;
  labels: Record<string, string>;
  kubeconfig: string;
}

/**
 * Where `registerCluster` keeps a cluster's credentials (docs/adr/0056-clusters-api.md): a Secret in rollplane's
 * namespace, or an entry of the embedded mode's credentials file, each marked as the API's. The API source reads them
 * back at every sync, so a registration survives a restart and reaches the registry by the one path the other sources
 * take.
 */
export interface ApiCredentialStore {
  /** Where, for people: "Secrets in rollplane-system", "the credentials file /data/member-clusters.yaml". */
  readonly description: string;
  /** Adds the entry; ConflictError when the store holds one of that name already. */
  add(entry: ApiClusterEntry): Promise<void>;
  /** Replaces the entry's labels; false when the store holds none of that name. */
  relabel(name: string, labels: Record<string, string>): Promise<boolean>;
  /** Removes the entry; false when the store holds none of that name. */
  remove(name: string): Promise<boolean>;
}

export interface MemberClusterAdminPorts {
  registry: MemberClusterRegistry;
  /** None when rollplane has nowhere to keep credentials (no Secret namespace, no credentials file). */
  credentials: ApiCredentialStore | undefined;
  /**
   * Checks a kubeconfig as every source's is checked (src/clusters/credentials.ts) and its server against the
   * operator's deny list; throws a coded error that says what is wrong and never quotes the kubeconfig.
   */
  checkKubeconfig(kubeconfig: string, where: string): Promise<void>;
  /** One probe of the cluster `kubeconfig` names (`verify: true`): its health as a connection would record it. */
  probe(name: string, kubeconfig: string): Promise<ClusterHealth>;
  /** A sync pass of every source that starts after this call; what it refused, by cluster name. */
  sync(): Promise<{ refused: readonly { name: string; reason: string }[] }>;
  /**
   * Ids of the rollouts still running (not in a final state) with a target in `cluster`. Filled by the history of
   * targets keyed by cluster (issue 29, second half); see src/start/memberClusters.ts.
   */
  activeRolloutIds(cluster: string): Promise<readonly string[]>;
  /** How many clusters are registered now, without a read (the query cost estimate's list size). */
  size(): number;
}

export interface RegisterClusterInput {
  name: string;
  kubeconfig: string;
  labels: Record<string, string>;
  /** Probe first and refuse a cluster that is not READY. */
  verify: boolean;
}

/**
 * The member cluster registry as the API sees it: reads with a name list and a label selector, and the admin's
 * registration, relabelling and deregistration of the clusters the API owns (source API). A cluster another source
 * owns (a person's Secret, Cluster API, the credentials file) is changed where it is kept, never here: CONFLICT naming
 * its source. Bad input changes nothing: every check runs before the credential store is written.
 */
export class MemberClusterAdmin {
  /** Admin changes one at a time in this process: a name checked free stays free until it is written. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly ports: MemberClusterAdminPorts) {}

  /** Registered clusters by name, only those named (when `names` is given) and matching `selector` (when given). */
  async list(filter: { names?: readonly string[] | null; selector?: string | null } = {}): Promise<MemberClusterRecord[]> {
    const requirements = filter.selector ? parseLabelSelector(filter.selector, 'selector') : [];
    const names = filter.names ? new Set(filter.names) : undefined;
    const all = await this.ports.registry.list();
    return all.filter((c) => (!names || names.has(c.name)) && matchesLabelSelector(requirements, c.labels));
  }

  find(name: string): Promise<MemberClusterRecord | undefined> {
    return this.ports.registry.find(name);
  }

  /** How many clusters are registered (connected) now. */
  size(): number {
    return this.ports.size();
  }

  register(input: RegisterClusterInput): Promise<MemberClusterRecord> {
    return this.serially(async () => {
      validateClusterName(input.name, 'input.name');
      if (input.name === LOCAL_CLUSTER) {
        throw new ConflictError(`"${LOCAL_CLUSTER}" is the cluster rollplane runs against; it is registered by rollplane itself`);
      }
      validateApiLabels(input.labels, 'input.labels');
      const existing = await this.ports.registry.find(input.name);
      if (existing)
        throw new ConflictError(`member cluster "${input.name}" is registered already (${ownerOf(existing)})`, { details: { source: existing.source } });
      const credentials = this.credentialStore();
      await this.ports.checkKubeconfig(input.kubeconfig, 'input.kubeconfig');
      let verified: ClusterHealth | undefined;
      if (input.verify) {
        const health = await this.ports.probe(input.name, input.kubeconfig);
        verified = health;
        if (health.state !== 'READY') {
          throw new ValidationError(
            'input.verify',
            `member cluster "${input.name}" did not pass verification: ${health.state}${health.message ? ` (${health.message})` : ''}; nothing was registered`,
            { details: { reason: 'VERIFY_FAILED', health: health.state } },
          );
        }
      }
      await credentials.add({ name: input.name, labels: input.labels, kubeconfig: input.kubeconfig });
      const pass = await this.ports.sync();
      const record = await this.ports.registry.find(input.name);
      if (record?.source === 'API') {
        // Verified just now: the answer says so, rather than CONNECTING until the new connection's first probe — only
        // while no probe has recorded anything yet (one conditional statement: a probe's answer is never overwritten).
        if (verified && (await this.ports.registry.recordHealth(input.name, verified, 'CONNECTING'))) {
          return (await this.ports.registry.find(input.name)) ?? record;
        }
        return record;
      }
      // The sources' pass did not register it (another source took the name meanwhile): take the entry out again.
      await credentials.remove(input.name);
      await this.ports.sync();
      const reason = pass.refused.find((r) => r.name === input.name)?.reason ?? (record ? ownerOf(record) : 'the registration was refused');
      throw new ConflictError(`member cluster "${input.name}" was not registered: ${reason}`);
    });
  }

  /** Sets `set` and removes `remove` from the cluster's labels (kubectl label's `k=v` and `k-`). `local` included. */
  updateLabels(name: string, set: Record<string, string>, remove: readonly string[]): Promise<MemberClusterRecord> {
    return this.serially(async () => {
      const record = await this.required(name);
      const labels: Record<string, string> = { ...record.labels, ...set };
      for (const key of remove) {
        if (Object.hasOwn(set, key)) throw new ValidationError('remove', `label "${key}" is both set and removed`);
        delete labels[key];
      }
      validateApiLabels(set, 'labels');
      validateClusterLabels(Object.fromEntries(remove.map((key) => [key, ''])), 'remove');
      validateClusterLabels(labels, 'labels');
      if (record.source === 'LOCAL') {
        // `local`'s labels live in its row (it has no credentials to keep elsewhere), kept across restarts (ADR 0056).
        await this.ports.registry.relabelLocal(labels);
        return (await this.ports.registry.find(name))!;
      }
      this.requireApiOwned(record);
      if (!(await this.credentialStore().relabel(name, labels))) throw this.lostEntry(name);
      await this.ports.sync();
      return (await this.ports.registry.find(name)) ?? record;
    });
  }

  /** Removes a cluster the API registered; CONFLICT while a rollout that targets it is running. */
  deregister(name: string): Promise<MemberClusterRecord> {
    return this.serially(async () => {
      const record = await this.required(name);
      if (record.source === 'LOCAL') throw new ConflictError(`"${LOCAL_CLUSTER}" is the cluster rollplane runs against; it cannot be deregistered`);
      this.requireApiOwned(record);
      const active = await this.ports.activeRolloutIds(name);
      if (active.length > 0) {
        throw new ConflictError(
          `member cluster "${name}" has ${active.length} active rollout(s) (${active.slice(0, 5).join(', ')}${active.length > 5 ? ', …' : ''}); abort them or wait for them to end, then deregister it`,
          { details: { rolloutIds: active.slice(0, 100) } },
        );
      }
      if (!(await this.credentialStore().remove(name))) throw this.lostEntry(name);
      await this.ports.sync();
      return record;
    });
  }

  private async required(name: string): Promise<MemberClusterRecord> {
    validateClusterName(name);
    const record = await this.ports.registry.find(name);
    if (!record) throw new NotFoundError(`no member cluster "${name}" is registered`, { details: { name } });
    return record;
  }

  private requireApiOwned(record: MemberClusterRecord): void {
    if (record.source === 'API') return;
    throw new ConflictError(`member cluster "${record.name}" is registered by ${ownerOf(record)}; change or remove it there, not through the API`, {
      details: { source: record.source },
    });
  }

  private credentialStore(): ApiCredentialStore {
    const store = this.ports.credentials;
    if (!store) {
      // Not UNAVAILABLE: that is retried by clients, and this deployment's settings will not change by retrying.
      throw new AppError(
        ErrorCode.NotImplemented,
        'rollplane has nowhere to keep member cluster credentials here: set ROLLPLANE_MEMBER_CLUSTER_SECRETS (a namespace) or ROLLPLANE_MEMBER_CLUSTERS_FILE',
        { details: { feature: 'registering member clusters through the API' } },
      );
    }
    return store;
  }

  /** The registry names an API cluster its store no longer holds (removed by hand): the next sync deregisters it. */
  private lostEntry(name: string): ConflictError {
    void this.ports.sync();
    return new ConflictError(`member cluster "${name}" is no longer in ${this.ports.credentials?.description}; it is being deregistered`);
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => {});
    return run;
  }
}

/** `SECRET (rollplane-system/edge-1)`: the source that owns a row, and where. */
function ownerOf(record: MemberClusterRecord): string {
  return record.sourceRef ? `${record.source} (${record.sourceRef})` : record.source;
}

function validateApiLabels(labels: Record<string, string>, field: string): void {
  const reserved = Object.keys(labels).find((key) => key.startsWith(RESERVED_LABEL_PREFIX));
  if (reserved) throw new ValidationError(field, `label "${reserved}": keys under ${RESERVED_LABEL_PREFIX} are rollplane's own`);
  validateClusterLabels(labels, field);
}
