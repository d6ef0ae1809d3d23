import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  adminToken,
  authEnabled,
  ConfigError,
  databaseUrl,
  dns1123Label,
  flag,
  hostName,
  integer,
  kubeconfigFiles,
  kubeTarget,
  list,
  network,
  oneOf,
  optionalText,
  publicUrl,
  type ReadContext,
  simFleet,
  tlsFile,
} from './configParsers.js';
import { parseRows, type Row, row, rowsOf, type Section } from './configRows.js';
import { KIND_SETTINGS } from './kinds/settings.js';

export { ConfigError, isLoopback, type KubeMode } from './configParsers.js';

/**
 * All of rollplane's configuration, from one table (docs/adr/0037): a row per setting carries its environment
 * variable (the flag is derived from it), its default, how it is parsed, what it means and the module it configures.
 * `Config` is the type of what the rows parse to; README.md's table is generated from them (`npm run docs:config`);
 * the defaults are written in the rows only (a test checks). Each rollout kind's rows live in its folder
 * (src/kinds/<kind>/settings.ts, ADR 0051); the table takes them from the settings' list of kinds.
 */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type LogFormat = 'json' | 'pretty';

export interface LoadConfigContext {
  /** Lets tests pretend a file exists (kubeconfig, service-account token). */
  fileExists?: (file: string) => boolean;
  homeDir?: string;
  /** Whether stdout is a terminal (decides the default log format). */
  isTty?: boolean;
  /** Lets tests supply file contents (ROLLPLANE_ADMIN_TOKEN_FILE). */
  readFile?: (file: string) => string;
}

// --- the table ------------------------------------------------------------------------------------------------------

const HTTP = 'src/start/api.ts';
const GUARD = 'src/graphql/guardPlugin.ts';
const SUBSCRIPTIONS = 'src/graphql/subscriptions.ts';
const MANAGER = 'src/controller/Manager.ts';
const NOTIFY = 'src/notify';
const GATES = 'src/start/gateTypes.ts';
const MEMBER_CLUSTERS = 'src/start/memberClusters.ts';
const MEMBER_CONNECTIONS = 'src/clusters/MemberConnection.ts';

/** Every setting, in the order of README's table. */
export const TABLE = {
  port: row({
    env: 'PORT',
    default: '4000',
    module: HTTP,
    description: 'HTTP port for GraphQL, WebSocket, /metrics and health (0 picks a free port)',
    parse: integer(0, 65535),
  }),
  host: row({
    env: 'HOST',
    default: '127.0.0.1',
    module: HTTP,
    description: 'Address to bind',
    parse: hostName,
  }),
  databaseUrl: row({
    env: 'DATABASE_URL',
    default: 'file:./data/rollplane.db',
    module: 'src/store/db.ts',
    description:
      'History store: SQLite `file:` URL (relative to the working directory), or `postgresql://user:password@host:port/database` for several replicas on one PostgreSQL',
    parse: databaseUrl,
  }),
  logLevel: row({
    env: 'LOG_LEVEL',
    default: 'info',
    module: 'src/log.ts',
    description: 'fatal, error, warn, info, debug, trace or silent',
    parse: oneOf<LogLevel>('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'),
  }),
  logFormat: row({
    env: 'LOG_FORMAT',
    shown: 'pretty on a terminal, else json',
    module: 'src/log.ts',
    description: '`json` (one JSON object per line) or `pretty`',
    parse: (raw, context) => oneOf<LogFormat>('json', 'pretty')(raw ?? (context.isTty ? 'pretty' : 'json'), context),
  }),
  kube: {
    mode: row({
      env: 'ROLLPLANE_KUBE',
      shown: 'kubeconfig if KUBECONFIG or ~/.kube/config exists, in-cluster if a service-account token is mounted, else sim',
      module: 'src/kubeConnection.ts',
      description: 'Kubernetes to drive: `sim` (embedded simulator), `kubeconfig` or `in-cluster`',
      parse: (_raw, context) => kubeTarget(context).mode,
    }),
    kubeconfigPath: row({
      env: 'KUBECONFIG',
      shown: '~/.kube/config',
      module: 'src/kubeConnection.ts',
      description: 'kubeconfig file for `kubeconfig` mode',
      parse: kubeconfigFiles,
    }),
    qps: row({
      env: 'ROLLPLANE_KUBE_QPS',
      default: '50',
      module: 'src/kube/createKubeClients.ts',
      description: 'Client-side rate limit for all Kubernetes API calls (requests/s)',
      parse: integer(1, 100_000),
    }),
    requestTimeoutMs: row({
      env: 'ROLLPLANE_KUBE_TIMEOUT_MS',
      default: '60000',
      module: 'src/kube/createKubeClients.ts',
      description: "Every request to rollplane's own cluster but a watch is aborted after this long (the API server's own --request-timeout is 1 min)",
      parse: integer(100, 600_000),
    }),
    burst: row({
      env: 'ROLLPLANE_KUBE_BURST',
      default: '100',
      module: 'src/kube/createKubeClients.ts',
      description: 'Burst allowed above the QPS limit',
      parse: integer(1, 100_000),
    }),
  },
  controllers: row({
    env: 'ROLLPLANE_CONTROLLERS',
    default: 'on',
    module: MANAGER,
    description: '`off` runs an API-only replica: no reconcilers and no rollout engine (rollouts wait for a replica that runs them)',
    parse: (raw, context) => oneOf('on', 'off')(raw, context) === 'on',
  }),
  rollouts: {
    workers: row({
      env: 'ROLLPLANE_ROLLOUT_WORKERS',
      default: '4',
      module: 'src/domain/engineController.ts',
      description: 'Rollouts the engine reconciles at once (one rollout is never reconciled by two workers)',
      parse: integer(1, 256),
    }),
  },
  leaderElection: {
    enabled: row({
      env: 'ROLLPLANE_LEADER_ELECT',
      default: 'true',
      module: MANAGER,
      description: 'Run reconcilers only on the replica holding the leader Lease (`false` for a single replica without Lease RBAC)',
      parse: flag,
    }),
    namespace: row({
      env: 'ROLLPLANE_LEASE_NAMESPACE',
      default: 'rollplane-system',
      module: MANAGER,
      description: 'Namespace of the leader election Lease',
      parse: dns1123Label,
    }),
    name: row({
      env: 'ROLLPLANE_LEASE_NAME',
      default: 'rollplane-controller',
      module: MANAGER,
      description: 'Name of the leader election Lease',
      parse: dns1123Label,
    }),
    leaseDurationMs: row({
      env: 'ROLLPLANE_LEASE_DURATION_MS',
      default: '15000',
      module: MANAGER,
      description: 'How long a leader Lease is valid without renewal',
      parse: integer(1000, 3_600_000),
    }),
    renewDeadlineMs: row({
      env: 'ROLLPLANE_LEASE_RENEW_DEADLINE_MS',
      default: '10000',
      module: MANAGER,
      description: 'The leader steps down when it could not renew for this long',
      parse: integer(500, 3_600_000),
    }),
    retryPeriodMs: row({
      env: 'ROLLPLANE_LEASE_RETRY_PERIOD_MS',
      default: '2000',
      module: MANAGER,
      description: 'Time between acquire and renew attempts',
      parse: integer(100, 3_600_000),
    }),
  },
  // Each rollout kind's group of rows, under its key and in the order of the settings' list of kinds.
  ...KIND_SETTINGS,
  sim: {
    fleet: row({
      env: 'ROLLPLANE_SIM_FLEET',
      default: 'demo',
      module: 'src/sim',
      description:
        'Simulator fleet: `demo`, `empty`, or sizes like `pools=1000,clusters=100,nodes=50`, optionally followed by `,upstream=` and upstream controllers joined by `+`: `vm-dhcp` (or `vm-dhcp:no-agent`), `vc-manager` (or `vc-manager:partial-upgrade` for the gate on), `caa`; e.g. `demo,upstream=vm-dhcp+vc-manager`. `demo` installs `vm-dhcp` and `caa`; an `upstream=` part replaces that (see below)',
      parse: simFleet,
    }),
    memberClusters: row({
      env: 'ROLLPLANE_SIM_MEMBER_CLUSTERS',
      default: 'auto',
      shown: '`demo` with the `demo` fleet, else `off`',
      module: 'src/sim/simulatedClusters.ts',
      description:
        'Simulated member clusters beside the embedded simulator (`ROLLPLANE_KUBE=sim` only): `demo` starts `edge-1` and `edge-2` (labels `tier=edge`, `region=…`, each with its own fleet and vm-dhcp-controller) and registers them in the credentials file (ROLLPLANE_MEMBER_CLUSTERS_FILE), so the cluster dimension shows out of the box; `off` gives `local` alone',
      parse: (raw, { setting, other }): 'demo' | 'off' => {
        if (raw === 'auto') return other('ROLLPLANE_SIM_FLEET') === 'demo' ? 'demo' : 'off';
        if (raw === 'demo' || raw === 'off') return raw;
        throw new ConfigError(setting, `must be auto, demo or off (got "${raw}")`);
      },
    }),
    prometheus: row({
      env: 'ROLLPLANE_SIM_PROMETHEUS',
      default: 'off',
      module: 'src/analysis/demoPrometheus.ts',
      description:
        "`on` (`ROLLPLANE_KUBE=sim` only): start the machine's Prometheus (Debian's `prometheus` package) on a free loopback port, scraping the embedded simulator (job `local`) and its simulated members (job = the cluster's name) every 5 s, as rollplane's Prometheus when ROLLPLANE_PROMETHEUS_URL is unset: the analysis demo of docs/analysis.md. Without the binary the service starts without it and says so (analysis gates are then refused at submit)",
      parse: (raw, { setting }): 'on' | 'off' => {
        if (raw === 'on' || raw === 'off') return raw;
        throw new ConfigError(setting, `must be on or off (got "${raw}")`);
      },
    }),
  },
  shutdownTimeoutMs: row({
    env: 'ROLLPLANE_SHUTDOWN_TIMEOUT_MS',
    default: '10000',
    module: 'src/serve.ts',
    description: 'Longest graceful shutdown before exiting anyway',
    parse: integer(100, 600_000),
  }),
  auth: {
    enabled: row({
      env: 'ROLLPLANE_AUTH',
      default: 'auto',
      module: 'src/auth',
      description:
        '`on`: bearer tokens required; `off`: no authentication (refused unless HOST is a loopback address); `auto`: off on loopback (with a warning), on otherwise',
      parse: authEnabled,
    }),
    adminToken: row({
      env: 'ROLLPLANE_ADMIN_TOKEN',
      shown: 'none (the first start prints a one-time admin token)',
      module: 'src/auth/bootstrap.ts',
      description:
        'Creates or rotates the `admin` token at start (mount it from a Kubernetes Secret); at least 32 characters. Prefer the variable or the file: a flag is visible to every local user in `ps`',
      parse: adminToken,
    }),
    adminTokenFile: row({
      env: 'ROLLPLANE_ADMIN_TOKEN_FILE',
      shown: 'none',
      module: 'src/auth/bootstrap.ts',
      description: 'File holding the admin token (instead of ROLLPLANE_ADMIN_TOKEN), e.g. a mounted Secret; trailing newline ignored',
      parse: optionalText,
    }),
  },
  rateLimits: {
    mutationsPerMinute: row({
      env: 'ROLLPLANE_MUTATIONS_PER_MINUTE',
      default: '60',
      module: GUARD,
      description: 'Mutations allowed per token (or per client address without authentication) per minute',
      parse: integer(1, 1_000_000),
    }),
    mutationBurst: row({
      env: 'ROLLPLANE_MUTATION_BURST',
      default: '20',
      module: GUARD,
      description: 'Mutations allowed in a burst above that rate',
      parse: integer(1, 1_000_000),
    }),
    queryCostPerMinute: row({
      env: 'ROLLPLANE_QUERY_COST_PER_MINUTE',
      default: '600000',
      module: GUARD,
      description:
        'Estimated query cost (as ROLLPLANE_MAX_QUERY_COST counts it) each token (or client address) may spend per minute, over HTTP and WebSocket together',
      parse: integer(1, 1_000_000_000),
    }),
    queryCostBurst: row({
      env: 'ROLLPLANE_QUERY_COST_BURST',
      default: '100000',
      module: GUARD,
      description: 'Query cost allowed in a burst above that rate; at least ROLLPLANE_MAX_QUERY_COST',
      parse: integer(1, 1_000_000_000),
    }),
  },
  subscriptions: {
    maxConnectionsPerClient: row({
      env: 'ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT',
      default: '64',
      module: SUBSCRIPTIONS,
      description: 'Open WebSocket connections per token (or client address without authentication); more are closed with 4429',
      parse: integer(1, 100_000),
    }),
    maxSubscriptionsPerConnection: row({
      env: 'ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION',
      default: '100',
      module: SUBSCRIPTIONS,
      description: 'Operations active at once on one WebSocket connection; one more closes it with 4429',
      parse: integer(1, 100_000),
    }),
    wsMaxBufferedBytes: row({
      env: 'ROLLPLANE_WS_MAX_BUFFERED_BYTES',
      default: '1048576',
      module: SUBSCRIPTIONS,
      description:
        'Unsent bytes one WebSocket may hold; past it its subscriptions stop taking live events and catch up from the store by id once it drains (shared fan-out)',
      parse: integer(1024, 1024 * 1024 * 1024),
    }),
  },
  graphql: {
    responseCacheBytes: row({
      env: 'ROLLPLANE_RESPONSE_CACHE_MB',
      default: '16',
      module: 'src/graphql/responseCache.ts',
      description:
        'MiB of heap (estimated) for answers to queries of the history (rollouts, rollout, events, clusterUpgradeDurations) and of the informer views (agentPools, agentPool, drift), served again until what they were read from changes; 0 turns the cache off',
      parse: integer(0, 4096, 1024 * 1024),
    }),
  },
  audit: {
    retentionDays: row({
      env: 'ROLLPLANE_AUDIT_RETENTION_DAYS',
      default: '90',
      module: 'src/domain/AuditLog.ts',
      description: 'Audit entries older than this are pruned (hourly and at start)',
      parse: integer(1, 36_500),
    }),
    maxEntries: row({
      env: 'ROLLPLANE_AUDIT_MAX_ENTRIES',
      default: '100000',
      module: 'src/domain/AuditLog.ts',
      description: 'The oldest audit entries beyond this many are pruned (an entry takes about 2 KB, at most 6 KB)',
      parse: integer(100, 1_000_000_000),
    }),
  },
  tls: {
    certFile: row({
      env: 'ROLLPLANE_TLS_CERT',
      shown: 'none (plain HTTP)',
      module: HTTP,
      description: 'PEM certificate file; with ROLLPLANE_TLS_KEY serves HTTPS and WSS',
      parse: tlsFile('ROLLPLANE_TLS_KEY'),
    }),
    keyFile: row({
      env: 'ROLLPLANE_TLS_KEY',
      shown: 'none',
      module: HTTP,
      description: 'PEM private key file for ROLLPLANE_TLS_CERT',
      parse: tlsFile('ROLLPLANE_TLS_CERT'),
    }),
  },
  corsOrigins: row({
    env: 'ROLLPLANE_CORS_ORIGINS',
    default: '',
    shown: 'none (CORS off)',
    module: 'src/http/originPolicy.ts',
    description: 'Comma-separated origins allowed to call the API from a browser',
    parse: list((item, { setting }) => {
      if (!/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(item)) throw new ConfigError(setting, `"${item}" is not an origin such as https://ui.example.com`);
    }),
  }),
  limits: {
    maxBodyBytes: row({
      env: 'ROLLPLANE_MAX_BODY_BYTES',
      default: '262144',
      module: GUARD,
      description: 'Largest GraphQL request body (the largest input, a 64 KiB specPatch, fits many times over)',
      parse: integer(1024, 100 * 1024 * 1024),
    }),
    maxQueryDepth: row({
      env: 'ROLLPLANE_MAX_QUERY_DEPTH',
      default: '12',
      module: GUARD,
      description: 'Deepest selection nesting a query may have',
      parse: integer(2, 100),
    }),
    maxAliases: row({
      env: 'ROLLPLANE_MAX_ALIASES',
      default: '30',
      module: GUARD,
      description: 'Most aliases one operation may use',
      parse: integer(0, 10_000),
    }),
    maxQueryCost: row({
      env: 'ROLLPLANE_MAX_QUERY_COST',
      default: '20000',
      module: GUARD,
      description: 'Highest estimated cost (fields × requested page sizes) of one operation',
      parse: integer(10, 100_000_000),
    }),
    maxQueryTokens: row({
      env: 'ROLLPLANE_MAX_QUERY_TOKENS',
      default: '2000',
      module: GUARD,
      description: 'Most lexical tokens one GraphQL document may hold (bounds parsing and validation before the other limits apply)',
      parse: integer(100, 1_000_000),
    }),
  },
  publicUrl: row({
    env: 'ROLLPLANE_PUBLIC_URL',
    shown: 'none',
    module: NOTIFY,
    description:
      'The URL people reach this rollplane at (e.g. `https://rollplane.example.com`): the CloudEvents `source` of notifications (`urn:rollplane` without it) and the base of links in Slack messages',
    parse: publicUrl,
  }),
  notifications: {
    allowNetworks: row({
      env: 'ROLLPLANE_NOTIFY_ALLOW_NETWORKS',
      default: 'none',
      module: NOTIFY,
      description:
        'Comma-separated networks (CIDR) that notification sinks may reach although they are not public: loopback, private, link-local and reserved addresses are refused otherwise (e.g. `10.20.0.0/16` for an internal receiver)',
      parse: list(network),
    }),
    timeoutMs: row({
      env: 'ROLLPLANE_NOTIFY_TIMEOUT_MS',
      default: '10000',
      module: NOTIFY,
      description: 'Longest one notification attempt may take (connect, send, answer)',
      parse: integer(100, 120_000),
    }),
    maxAttempts: row({
      env: 'ROLLPLANE_NOTIFY_MAX_ATTEMPTS',
      default: '10',
      module: NOTIFY,
      description: 'Attempts of one notification before it is dead-lettered (visible, and replayable)',
      parse: integer(1, 100),
    }),
    backoffBaseMs: row({
      env: 'ROLLPLANE_NOTIFY_BACKOFF_MS',
      default: '5000',
      module: NOTIFY,
      description: 'Wait after a failed notification attempt; doubled each time (with jitter) up to ROLLPLANE_NOTIFY_BACKOFF_MAX_MS',
      parse: integer(1, 86_400_000),
    }),
    backoffMaxMs: row({
      env: 'ROLLPLANE_NOTIFY_BACKOFF_MAX_MS',
      default: '3600000',
      module: NOTIFY,
      description: 'Longest wait between two attempts of a notification',
      parse: integer(1, 7 * 86_400_000),
    }),
    concurrency: row({
      env: 'ROLLPLANE_NOTIFY_CONCURRENCY',
      default: '8',
      module: NOTIFY,
      description: 'Notifications of one subscription in flight at once (the leader sends; one subscription never waits for another)',
      parse: integer(1, 256),
    }),
    retentionDays: row({
      env: 'ROLLPLANE_NOTIFY_RETENTION_DAYS',
      default: '30',
      module: NOTIFY,
      description: 'Deliveries that are no longer pending are pruned this many days after they were written (hourly and at start)',
      parse: integer(1, 36_500),
    }),
  },
  gates: {
    prometheusUrl: row({
      env: 'ROLLPLANE_PROMETHEUS_URL',
      shown: 'none',
      module: GATES,
      description:
        "rollplane's Prometheus (e.g. `http://prometheus:9090`), asked by ANALYSIS and ALERT gates that name no address of their own; unset, such a gate is refused when the rollout is submitted (UNAVAILABLE, `PROMETHEUS_NOT_CONFIGURED`)",
      parse: publicUrl,
    }),
    externalCheckSecretsFile: row({
      env: 'ROLLPLANE_EXTERNAL_CHECK_SECRETS_FILE',
      shown: 'none',
      module: GATES,
      description:
        'YAML map of signing-secret names to secrets for EXTERNAL_CHECK gates (read at start): a gate names one as `secret`, so the secret itself is never in a gate config, the API or the history; unset, no external check can be submitted',
      parse: (raw) => (raw === undefined || raw === 'none' ? undefined : path.resolve(raw)),
    }),
  },
  memberClusters: {
    secretNamespace: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_SECRETS',
      default: 'rollplane-system',
      module: MEMBER_CLUSTERS,
      description:
        "Namespace (of the cluster rollplane runs against) whose Secrets labelled `rollplane.io/member-cluster=true` register member clusters (kubeconfig under `kubeconfig`; name from the `rollplane.io/cluster-name` annotation, else the Secret's; labels from the Secret's), or `off`",
      parse: (raw, context) => (raw === 'off' ? undefined : dns1123Label(raw, context)),
    }),
    capi: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_CAPI',
      default: 'off',
      module: MEMBER_CLUSTERS,
      description:
        "Register Cluster API's workload clusters from their `<name>-kubeconfig` Secrets (key `value`, label `cluster.x-k8s.io/cluster-name`): `off`, `all` namespaces, or comma-separated namespaces",
      parse: (raw, context): 'off' | 'all' | readonly string[] =>
        raw === 'off' || raw === 'all' ? raw : list((item) => dns1123Label(item, context))(raw, context),
    }),
    file: row({
      env: 'ROLLPLANE_MEMBER_CLUSTERS_FILE',
      default: 'auto',
      module: MEMBER_CLUSTERS,
      description:
        "Embedded mode's member cluster credentials file (YAML, created 0600, refused when group or others may read it): `auto` is `member-clusters.yaml` beside the SQLite database (none on PostgreSQL), else a path, or `off`",
      parse: memberClustersFile,
    }),
    execPlugins: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_EXEC_PLUGINS',
      default: 'false',
      module: 'src/clusters/credentials.ts',
      description: 'Accept member kubeconfigs whose users run an `exec` or `auth-provider` plugin (it runs a command inside rollplane: refused by default)',
      parse: flag,
    }),
    qps: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_QPS',
      default: '20',
      module: MEMBER_CONNECTIONS,
      description: "Client-side rate limit of each member cluster's connection (requests/s; each member has its own)",
      parse: integer(1, 100_000),
    }),
    burst: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_BURST',
      default: '40',
      module: MEMBER_CONNECTIONS,
      description: "Burst allowed above each member's QPS limit",
      parse: integer(1, 100_000),
    }),
    requestTimeoutMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS',
      default: '10000',
      module: MEMBER_CONNECTIONS,
      description: 'Every request to a member cluster but a watch is aborted after this long',
      parse: integer(100, 600_000),
    }),
    probeIntervalMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_PROBE_MS',
      default: '30000',
      module: MEMBER_CONNECTIONS,
      description: 'How often a member cluster that answers is probed (/version and discovery of the kinds it serves)',
      parse: integer(100, 3_600_000),
    }),
    shards: row({
      env: 'ROLLPLANE_MEMBER_SHARDS',
      default: '8',
      module: 'src/clusters/ShardLeases.ts',
      description:
        "Shards the member clusters are spread over between replicas (with leader election): one Lease `<ROLLPLANE_LEASE_NAME>-shard-<n>` per shard in the Lease namespace, a member's shard a hash of its name; each replica holds at most ceil(shards / live replicas). More shards spread more evenly over more replicas, and cost each holder two requests per shard per retry period against the management cluster",
      parse: integer(1, 256),
    }),
    backoffBaseMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS',
      default: '1000',
      module: MEMBER_CONNECTIONS,
      description: 'First retry after a member cluster failed to answer; doubled after each further failure (±20% jitter)',
      parse: integer(10, 600_000),
    }),
    backoffMaxMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS',
      default: '300000',
      module: MEMBER_CONNECTIONS,
      description: 'Longest wait between two retries of a member cluster that does not answer',
      parse: integer(10, 3_600_000),
    }),
    waitingProbeMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_WAITING_PROBE_MS',
      default: '5000',
      module: MEMBER_CONNECTIONS,
      description:
        'Longest wait between two retries of a member cluster that does not answer while targets of a rollout wait on it (instead of its grown backoff, at most ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS), so they are driven soon after it answers again',
      parse: integer(10, 3_600_000),
    }),
    cacheGraceMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_CACHE_GRACE_MS',
      default: '60000',
      module: 'src/clusters/MemberRuntimes.ts',
      description:
        "How long a member cluster that stopped answering its probes keeps its caches (informers) before they are dropped: it is not driven meanwhile, but one that answers again within this time needs no full re-list. 0 drops them at once. At a fleet's scale a missed probe under load otherwise dropped caches, whose re-lists made more probes miss",
      parse: integer(0, 3_600_000),
    }),
    syncIntervalMs: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_SYNC_MS',
      default: '30000',
      module: MEMBER_CLUSTERS,
      description: 'How often the member cluster sources (Secrets, Cluster API Secrets, the credentials file) are read again',
      parse: integer(100, 3_600_000),
    }),
    denyNetworks: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS',
      default: 'none',
      module: 'src/clusters/memberNetwork.ts',
      description:
        "Comma-separated networks (CIDR) no member cluster's server may be in, checked at registration and on every connection after DNS resolution (e.g. `169.254.0.0/16` for link-local and the cloud metadata endpoint, plus rollplane's own pod network); a list that denies loopback also denies the unspecified addresses (`0.0.0.0/8`, `::`), which reach the host itself; none by default, since member clusters live on private networks",
      parse: list(network),
    }),
    maxDiscoveryBytes: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_MAX_DISCOVERY_BYTES',
      default: '8388608',
      module: 'src/clusters/memberNetwork.ts',
      description:
        'Largest /version or discovery answer read from a member cluster (bytes); a larger one ends the request and the member is UNREACHABLE with `ERESPONSE_TOO_LARGE`. Members are asked for uncompressed answers, and a compressed one is refused unread (`ECONTENT_ENCODING`), so the cap counts what is read',
      parse: integer(65_536, 1_073_741_824),
    }),
    maxListBytes: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_MAX_LIST_BYTES',
      default: '134217728',
      module: 'src/clusters/memberNetwork.ts',
      description:
        "Largest answer but a watch's read from a member cluster (bytes): a list (10,000 agent pools are about 30 MB), a get or a write's answer; a larger one ends the request, and the member is UNREACHABLE with `ERESPONSE_TOO_LARGE` naming this setting until its next probe",
      parse: integer(1_048_576, 4_294_967_296),
    }),
    maxWatchEventBytes: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_MAX_WATCH_EVENT_BYTES',
      default: '8388608',
      module: 'src/clusters/memberNetwork.ts',
      description:
        'Largest watch event (one line of a watch) read from a member cluster (bytes; a kube-apiserver stores objects of at most about 1.5 MiB); a longer line, or one that never ends, ends the watch, and the member is UNREACHABLE with `ERESPONSE_TOO_LARGE` naming this setting until its next probe',
      parse: integer(65_536, 1_073_741_824),
    }),
    kubeVersions: row({
      env: 'ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS',
      default: '1.24-1.34',
      module: MEMBER_CONNECTIONS,
      description: 'Kubernetes versions rollplane drives (`MIN-MAX` minor versions, both included); a member outside them is VERSION_SKEW',
      parse: versionWindow,
    }),
  },
};

/** `auto`: the file beside the SQLite database (none on PostgreSQL, whose replicas share no data directory). */
function memberClustersFile(raw: string, context: ReadContext): string | undefined {
  if (raw === 'off') return undefined;
  if (raw !== 'auto') return path.resolve(raw);
  const database = context.other('DATABASE_URL') ?? '';
  if (!database.startsWith('file:')) return undefined;
  return path.join(path.dirname(path.resolve(database.slice('file:'.length).split('?')[0]!)), 'member-clusters.yaml');
}

function versionWindow(raw: string, { setting }: ReadContext): { min: { major: number; minor: number }; max: { major: number; minor: number } } {
  const match = /^(\d+)\.(\d+)-(\d+)\.(\d+)$/.exec(raw.trim());
  if (!match) throw new ConfigError(setting, `must be MIN-MAX Kubernetes versions such as 1.24-1.34 (got "${raw}")`);
  const [min, max] = [
    { major: Number(match[1]), minor: Number(match[2]) },
    { major: Number(match[3]), minor: Number(match[4]) },
  ];
  if (min.major * 1000 + min.minor > max.major * 1000 + max.minor)
    throw new ConfigError(setting, `the first version must not be above the second (got "${raw}")`);
  return { min, max };
}

// --- Config: the type of what the rows parse to ---------------------------------------------------------------------

export type Config = Section<typeof TABLE>;

/** The rows in table order: `--help`, README's table and the deployment manifests' check read these. */
export const SETTINGS: readonly Row<unknown>[] = rowsOf(TABLE);

/** Rules between settings, checked once every row has parsed. */
const CHECKS: ((config: Config) => void)[] = [
  ({ leaderElection: { leaseDurationMs: d, renewDeadlineMs: r, retryPeriodMs: p } }) => {
    if (!(d > r && r > p)) {
      throw new ConfigError('ROLLPLANE_LEASE_RENEW_DEADLINE_MS', `lease duration (${d}) > renew deadline (${r}) > retry period (${p}) must hold`);
    }
  },
  ({ notifications }) => {
    if (notifications.backoffMaxMs < notifications.backoffBaseMs) {
      throw new ConfigError('ROLLPLANE_NOTIFY_BACKOFF_MAX_MS', `must be at least ROLLPLANE_NOTIFY_BACKOFF_MS (${notifications.backoffBaseMs})`);
    }
  },
  ({ memberClusters: { backoffBaseMs, backoffMaxMs } }) => {
    if (backoffMaxMs < backoffBaseMs)
      throw new ConfigError('ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS', `must be at least ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS (${backoffBaseMs})`);
  },
  ({ rateLimits, limits }) => {
    if (rateLimits.queryCostBurst < limits.maxQueryCost) {
      throw new ConfigError(
        'ROLLPLANE_QUERY_COST_BURST',
        `must be at least ROLLPLANE_MAX_QUERY_COST (${limits.maxQueryCost}), or the largest allowed query could never run (got ${rateLimits.queryCostBurst})`,
      );
    }
  },
];

/**
 * Reads, validates and freezes the configuration: every row parses its flag, else its variable, else its default.
 * Throws ConfigError naming the setting (its variable) on the first bad value; unknown flags are refused too.
 */
export function loadConfig(env: NodeJS.ProcessEnv, argv: readonly string[], context: LoadConfigContext = {}): Config {
  let flags: Record<string, string | undefined>;
  try {
    const options = Object.fromEntries(SETTINGS.map((s) => [s.flag.slice(2), { type: 'string' as const }]));
    flags = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Record<string, string | undefined>;
  } catch (error) {
    throw new ConfigError('command line', (error as Error).message);
  }
  const byEnv = new Map(SETTINGS.map((s) => [s.env, s]));
  const given = (setting: Row<unknown>): string | undefined => {
    const value = flags[setting.flag.slice(2)] ?? env[setting.env];
    return value === undefined || value === '' ? undefined : value;
  };
  const base = {
    other: (name: string) => given(byEnv.get(name)!) ?? byEnv.get(name)!.fallback,
    fileExists: context.fileExists ?? existsSync,
    readFile: context.readFile ?? ((file: string) => readFileSync(file, 'utf8')),
    homeDir: context.homeDir ?? os.homedir(),
    isTty: context.isTty ?? false,
  };
  const config: Config = parseRows(TABLE, base, (setting) => ({ text: given(setting), fromFlag: flags[setting.flag.slice(2)] !== undefined }));
  for (const check of CHECKS) check(config);
  return config;
}

/** Every setting at its default (in the simulator): what a module may fall back to when a test leaves an option out. */
export const CONFIG_DEFAULTS: Config = loadConfig({}, [], { fileExists: () => false, homeDir: '/nonexistent', isTty: false });
