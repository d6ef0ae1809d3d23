import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseImageReference } from './util/imageReference.js';
import { DatabaseUrlError, parseDatabaseUrl } from './util/databaseUrl.js';
import { AppError, ErrorCode } from './errors.js';
// A leaf module (no simulator code): only the names of the upstream behaviours, for validation.
import { parseUpstreamSpec, UPSTREAM_TOKENS } from './sim/behaviour/upstream/selection.js';

/**
 * All of rollplane's configuration, read in exactly one place (`loadConfig`) from the environment and command-line
 * flags (flags win). Every setting, its flag and its default are listed in SETTINGS, which is also the README table.
 */
export type KubeMode = 'sim' | 'kubeconfig' | 'in-cluster';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type LogFormat = 'json' | 'pretty';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  readonly kube: {
    readonly mode: KubeMode;
    /** Path of the kubeconfig file in `kubeconfig` mode. */
    readonly kubeconfigPath?: string;
    /** Client-side budget for all Kubernetes API calls. */
    readonly qps: number;
    readonly burst: number;
  };
  /** Run the reconcilers and the rollout engine in this process (off: an API-only replica). */
  readonly controllers: boolean;
  /** The rollout engine's work queue. */
  readonly rollouts: {
    /** Rollouts reconciled at once (one rollout never by two workers). */
    readonly workers: number;
  };
  readonly leaderElection: {
    readonly enabled: boolean;
    readonly namespace: string;
    readonly name: string;
    readonly leaseDurationMs: number;
    readonly renewDeadlineMs: number;
    readonly retryPeriodMs: number;
  };
  /** Agent pools (harvester/vm-dhcp-controller). */
  readonly agentPools: {
    /**
     * `auto`: beside a vm-dhcp-controller that deploys agents, coexist (hold, change its --image, release); without
     * one, or beside one run with --no-agent, manage the agents directly. `coexist`/`direct` insist, and a rollout
     * the cluster does not allow is refused (docs/adr/0017).
     */
    readonly mode: 'auto' | 'coexist' | 'direct';
    /** `namespace/name` of the vm-dhcp-controller Deployment; undefined: found by the chart's labels. */
    readonly vmDhcpController?: { readonly namespace: string; readonly name: string };
    readonly agentNamespace: string;
    readonly agentImage: string;
    /** ServiceAccount of the agent Pods rollplane creates in direct mode; it must exist in the agent namespace. */
    readonly serviceAccountName: string;
    /** Seconds before a Terminating agent on a NotReady node is force-deleted; null = never. */
    readonly stuckGraceSeconds: number | null;
    readonly workers: number;
  };
  /** Node agents (cloud-api-adaptor). */
  readonly nodeAgents: {
    readonly daemonSets: readonly string[];
    readonly peerRuntimeClass: string;
    readonly workers: number;
  };
  /** Virtual clusters (cluster-api-provider-nested). */
  readonly virtualClusters: {
    readonly partialUpgrade: boolean;
    readonly readyTimeoutMs: number;
    readonly pollIntervalMs: number;
    readonly keyAlgorithm: 'ecdsa-p256' | 'rsa-2048';
    /** The vc-manager Deployment rollplane watches for the upstream gate; null: none is looked for. */
    readonly vcManager: { readonly namespace: string; readonly name: string } | null;
    readonly workers: number;
  };
  readonly sim: {
    /** Fleet the embedded simulator starts with (`demo`, `empty`, or a size spec such as `pools=1000,nodes=50`). */
    readonly fleet: string;
  };
  /** Upper bound for a graceful shutdown before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  readonly auth: {
    /** Bearer tokens required for the API. Off is allowed only on a loopback address. */
    readonly enabled: boolean;
    /** Creates or rotates the `admin` token at start (e.g. from a Kubernetes Secret). */
    readonly adminToken?: string;
    /** Where adminToken came from: a command-line flag is visible to every local user in `ps`, so start warns. */
    readonly adminTokenSource?: 'flag' | 'env' | 'file';
    /** Mutations allowed per token per minute, and the burst above that. */
    readonly mutationsPerMinute: number;
    readonly mutationBurst: number;
    /** Estimated query cost (see queryLimits.ts) a caller may spend per minute, and the burst above that. */
    readonly queryCostPerMinute: number;
    readonly queryCostBurst: number;
    /** Open WebSocket connections per token (or client address without authentication). */
    readonly maxConnectionsPerClient: number;
    /** Active operations on one WebSocket connection. */
    readonly maxSubscriptionsPerConnection: number;
    /** `shared`: one execution per event and distinct (document, variables, role); `per-subscriber`: graphql-ws's own path. */
    readonly subscriptionFanOut: 'shared' | 'per-subscriber';
    /** Interpreted runs of a query document before it runs compiled (graphql-jit, ADR 0025); null: never compiled. */
    readonly graphqlCompileAfter: number | null;
    /** Heap (estimated) for query answers kept for reuse until what they were read from changes (ADR 0026); 0: no response cache. */
    readonly responseCacheBytes: number;
    /** Unsent bytes one WebSocket may hold before its subscriptions catch up from the store instead of taking live events. */
    readonly wsMaxBufferedBytes: number;
    /** Audit entries older than this many days are pruned; so are the oldest beyond maxEntries. */
    readonly auditRetentionDays: number;
    readonly auditMaxEntries: number;
  };
  /** Notifications (docs/adr/0035): the SSRF guard's exceptions and the delivery policy. */
  readonly notifications: {
    readonly allowNetworks: readonly string[];
    readonly timeoutMs: number;
    readonly maxAttempts: number;
    readonly backoffBaseMs: number;
    readonly backoffMaxMs: number;
    readonly concurrency: number;
    readonly retentionDays: number;
  };
  /** Where people reach this server (no trailing slash); undefined when not configured. */
  readonly publicUrl?: string;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Origins allowed by CORS; empty = CORS off. */
  readonly corsOrigins: readonly string[];
  readonly limits: {
    readonly maxBodyBytes: number;
    readonly maxQueryDepth: number;
    readonly maxAliases: number;
    readonly maxQueryCost: number;
    /** Tokens a GraphQL document may hold: bounds parsing and validation work before any other limit applies. */
    readonly maxQueryTokens: number;
  };
}

/** 127.0.0.0/8, ::1 and localhost: the addresses on which authentication may be off. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export class ConfigError extends AppError {
  constructor(setting: string, reason: string) {
    super(ErrorCode.BadUserInput, `invalid configuration: ${setting}: ${reason}`, { details: { setting } });
  }
}

interface Setting {
  env: string;
  flag: string;
  default: string;
  description: string;
}

/** The single table of settings; README.md's configuration table mirrors it (a test checks that). */
export const SETTINGS: readonly Setting[] = [
  { env: 'PORT', flag: '--port', default: '4000', description: 'HTTP port for GraphQL, WebSocket, /metrics and health (0 picks a free port)' },
  { env: 'HOST', flag: '--host', default: '127.0.0.1', description: 'Address to bind' },
  {
    env: 'DATABASE_URL',
    flag: '--database-url',
    default: 'file:./data/rollplane.db',
    description:
      'History store: SQLite `file:` URL (relative to the working directory), or `postgresql://user:password@host:port/database` for several replicas on one PostgreSQL',
  },
  { env: 'LOG_LEVEL', flag: '--log-level', default: 'info', description: 'fatal, error, warn, info, debug, trace or silent' },
  { env: 'LOG_FORMAT', flag: '--log-format', default: 'pretty on a terminal, else json', description: '`json` (one JSON object per line) or `pretty`' },
  {
    env: 'ROLLPLANE_KUBE',
    flag: '--kube',
    default: 'kubeconfig if KUBECONFIG or ~/.kube/config exists, in-cluster if a service-account token is mounted, else sim',
    description: 'Kubernetes to drive: `sim` (embedded simulator), `kubeconfig` or `in-cluster`',
  },
  { env: 'KUBECONFIG', flag: '--kubeconfig', default: '~/.kube/config', description: 'kubeconfig file for `kubeconfig` mode' },
  { env: 'ROLLPLANE_KUBE_QPS', flag: '--kube-qps', default: '50', description: 'Client-side rate limit for all Kubernetes API calls (requests/s)' },
  { env: 'ROLLPLANE_KUBE_BURST', flag: '--kube-burst', default: '100', description: 'Burst allowed above the QPS limit' },
  {
    env: 'ROLLPLANE_CONTROLLERS',
    flag: '--controllers',
    default: 'on',
    description: '`off` runs an API-only replica: no reconcilers and no rollout engine (rollouts wait for a replica that runs them)',
  },
  {
    env: 'ROLLPLANE_ROLLOUT_WORKERS',
    flag: '--rollout-workers',
    default: '4',
    description: 'Rollouts the engine reconciles at once (one rollout is never reconciled by two workers)',
  },
  {
    env: 'ROLLPLANE_LEADER_ELECT',
    flag: '--leader-elect',
    default: 'true',
    description: 'Run reconcilers only on the replica holding the leader Lease (`false` for a single replica without Lease RBAC)',
  },
  { env: 'ROLLPLANE_LEASE_NAMESPACE', flag: '--lease-namespace', default: 'rollplane-system', description: 'Namespace of the leader election Lease' },
  { env: 'ROLLPLANE_LEASE_NAME', flag: '--lease-name', default: 'rollplane-controller', description: 'Name of the leader election Lease' },
  { env: 'ROLLPLANE_LEASE_DURATION_MS', flag: '--lease-duration-ms', default: '15000', description: 'How long a leader Lease is valid without renewal' },
  {
    env: 'ROLLPLANE_LEASE_RENEW_DEADLINE_MS',
    flag: '--lease-renew-deadline-ms',
    default: '10000',
    description: 'The leader steps down when it could not renew for this long',
  },
  { env: 'ROLLPLANE_LEASE_RETRY_PERIOD_MS', flag: '--lease-retry-period-ms', default: '2000', description: 'Time between acquire and renew attempts' },
  {
    env: 'ROLLPLANE_AGENT_MODE',
    flag: '--agent-mode',
    default: 'auto',
    description:
      'How agent-pool rollouts work: `coexist` (beside a vm-dhcp-controller that deploys agents: hold pools, change its `--image`, release them in waves), `direct` (rollplane recreates agents; only without such a controller), `auto` (coexist when the controller deploys agents, else direct). A mode the cluster does not allow refuses the rollout (`CONFLICT`, reason `AGENT_MODE_MISMATCH`)',
  },
  {
    env: 'ROLLPLANE_VMDHCP_CONTROLLER',
    flag: '--vmdhcp-controller',
    default: 'auto',
    description:
      "The vm-dhcp-controller Deployment as `namespace/name`; `auto` finds it by the chart's labels (`app.kubernetes.io/name=harvester-vm-dhcp-controller`, `app.kubernetes.io/component=controller`)",
  },
  { env: 'ROLLPLANE_AGENT_NAMESPACE', flag: '--agent-namespace', default: 'harvester-system', description: 'Namespace of the DHCP agents' },
  {
    env: 'ROLLPLANE_AGENT_IMAGE',
    flag: '--agent-image',
    default: 'rancher/harvester-vm-dhcp-agent:v1.8.1',
    description: 'Agent image for pools that have none recorded yet (rollouts change it per pool)',
  },
  {
    env: 'ROLLPLANE_AGENT_SERVICE_ACCOUNT',
    flag: '--agent-service-account',
    default: 'harvester-vm-dhcp-controller-agent',
    description:
      "ServiceAccount of the agents rollplane creates (direct mode only): the vm-dhcp-controller chart's `<release fullname>-agent` (this default is release `harvester-vm-dhcp-controller`, as its README installs it)",
  },
  {
    env: 'ROLLPLANE_AGENT_STUCK_GRACE_SECONDS',
    flag: '--agent-stuck-grace-seconds',
    default: '120',
    description: 'Force-delete an agent Terminating this long on a NotReady node (`off` disables)',
  },
  { env: 'ROLLPLANE_AGENT_WORKERS', flag: '--agent-workers', default: '16', description: 'Concurrent IPPool reconciles' },
  {
    env: 'ROLLPLANE_NODE_AGENT_DAEMONSETS',
    flag: '--node-agent-daemonsets',
    default: 'none',
    description: 'Comma-separated `namespace/name` DaemonSets to manage besides those labelled `rollplane.io/node-agent: "true"`',
  },
  {
    env: 'ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS',
    flag: '--node-agent-peer-runtime-class',
    default: 'kata-remote',
    description:
      "Runtime class of the peer pods gating each node when the agent sets no RUNTIMECLASS_NAME (the CAA's peer-pods-cm) and neither the bump nor the DaemonSet names one",
  },
  { env: 'ROLLPLANE_NODE_AGENT_WORKERS', flag: '--node-agent-workers', default: '4', description: 'Concurrent node gate reconciles' },
  {
    env: 'ROLLPLANE_VC_PARTIAL_UPGRADE',
    flag: '--vc-partial-upgrade',
    default: 'true',
    description: 'Feature gate ClusterVersionPartialUpgrade: `false` ignores the ready-for-upgrade label and refuses bumpClusterVersion',
  },
  {
    env: 'ROLLPLANE_VC_READY_TIMEOUT_SECONDS',
    flag: '--vc-ready-timeout-seconds',
    default: '600',
    description: 'How long one control-plane StatefulSet may take to roll',
  },
  { env: 'ROLLPLANE_VC_POLL_SECONDS', flag: '--vc-poll-seconds', default: '2', description: 'Re-check interval while waiting for a StatefulSet' },
  {
    env: 'ROLLPLANE_VC_KEY_ALGORITHM',
    flag: '--vc-key-algorithm',
    default: 'rsa-2048',
    description:
      'Key type of regenerated control-plane certificates: `rsa-2048` (PKCS#1, as upstream) or `ecdsa-p256` (cheaper; breaks the CAPN vc-manager, which reads root-ca only as PKCS#1 RSA)',
  },
  {
    env: 'ROLLPLANE_VC_MANAGER',
    flag: '--vc-manager',
    default: 'vc-manager/vc-manager',
    description:
      'namespace/name of the CAPN vc-manager Deployment whose `--feature-gates` rollplane reads (gate ClusterVersionPartialUpgrade on: rollplane leaves upgrades to it), or `none`',
  },
  { env: 'ROLLPLANE_VC_WORKERS', flag: '--vc-workers', default: '10', description: 'Concurrent VirtualCluster upgrade reconciles' },
  {
    env: 'ROLLPLANE_SIM_FLEET',
    flag: '--sim-fleet',
    default: 'demo',
    description:
      'Simulator fleet: `demo`, `empty`, or sizes like `pools=1000,clusters=100,nodes=50`; `,upstream=vm-dhcp+vc-manager+caa` adds upstream controllers',
  },
  { env: 'ROLLPLANE_SHUTDOWN_TIMEOUT_MS', flag: '--shutdown-timeout-ms', default: '10000', description: 'Longest graceful shutdown before exiting anyway' },
  {
    env: 'ROLLPLANE_AUTH',
    flag: '--auth',
    default: 'auto',
    description:
      '`on`: bearer tokens required; `off`: no authentication (refused unless HOST is a loopback address); `auto`: off on loopback (with a warning), on otherwise',
  },
  {
    env: 'ROLLPLANE_ADMIN_TOKEN',
    flag: '--admin-token',
    default: 'none (the first start prints a one-time admin token)',
    description:
      'Creates or rotates the `admin` token at start (mount it from a Kubernetes Secret); at least 32 characters. Prefer the variable or the file: a flag is visible to every local user in `ps`',
  },
  {
    env: 'ROLLPLANE_ADMIN_TOKEN_FILE',
    flag: '--admin-token-file',
    default: 'none',
    description: 'File holding the admin token (instead of ROLLPLANE_ADMIN_TOKEN), e.g. a mounted Secret; trailing newline ignored',
  },
  {
    env: 'ROLLPLANE_MUTATIONS_PER_MINUTE',
    flag: '--mutations-per-minute',
    default: '60',
    description: 'Mutations allowed per token (or per client address without authentication) per minute',
  },
  { env: 'ROLLPLANE_MUTATION_BURST', flag: '--mutation-burst', default: '20', description: 'Mutations allowed in a burst above that rate' },
  {
    env: 'ROLLPLANE_QUERY_COST_PER_MINUTE',
    flag: '--query-cost-per-minute',
    default: '600000',
    description:
      'Estimated query cost (as ROLLPLANE_MAX_QUERY_COST counts it) each token (or client address) may spend per minute, over HTTP and WebSocket together',
  },
  {
    env: 'ROLLPLANE_QUERY_COST_BURST',
    flag: '--query-cost-burst',
    default: '100000',
    description: 'Query cost allowed in a burst above that rate; at least ROLLPLANE_MAX_QUERY_COST',
  },
  {
    env: 'ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT',
    flag: '--max-connections-per-client',
    default: '64',
    description: 'Open WebSocket connections per token (or client address without authentication); more are closed with 4429',
  },
  {
    env: 'ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION',
    flag: '--max-subscriptions-per-connection',
    default: '100',
    description: 'Operations active at once on one WebSocket connection; one more closes it with 4429',
  },
  {
    env: 'ROLLPLANE_SUBSCRIPTION_FAN_OUT',
    flag: '--subscription-fan-out',
    default: 'shared',
    description:
      '`shared`: each event is executed once per distinct (document, variables, role) and the serialized message sent to every subscriber sharing it; `per-subscriber`: once per subscriber (the former path, kept for comparison)',
  },
  {
    env: 'ROLLPLANE_GRAPHQL_COMPILE_AFTER',
    flag: '--graphql-compile-after',
    default: '2',
    description:
      'Runs of a query document in graphql-js before it runs compiled (graphql-jit); one-off documents are never compiled. `off` never compiles, 0 compiles on the first run',
  },
  {
    env: 'ROLLPLANE_RESPONSE_CACHE_MB',
    flag: '--response-cache-mb',
    default: '16',
    description:
      'MiB of heap (estimated) for answers to queries of the history (rollouts, rollout, events, clusterUpgradeDurations) and of the informer views (agentPools, agentPool, drift), served again until what they were read from changes; 0 turns the cache off',
  },
  {
    env: 'ROLLPLANE_WS_MAX_BUFFERED_BYTES',
    flag: '--ws-max-buffered-bytes',
    default: '1048576',
    description:
      'Unsent bytes one WebSocket may hold; past it its subscriptions stop taking live events and catch up from the store by id once it drains (shared fan-out)',
  },
  {
    env: 'ROLLPLANE_AUDIT_RETENTION_DAYS',
    flag: '--audit-retention-days',
    default: '90',
    description: 'Audit entries older than this are pruned (hourly and at start)',
  },
  {
    env: 'ROLLPLANE_AUDIT_MAX_ENTRIES',
    flag: '--audit-max-entries',
    default: '100000',
    description: 'The oldest audit entries beyond this many are pruned (an entry takes about 2 KB, at most 6 KB)',
  },
  {
    env: 'ROLLPLANE_TLS_CERT',
    flag: '--tls-cert',
    default: 'none (plain HTTP)',
    description: 'PEM certificate file; with ROLLPLANE_TLS_KEY serves HTTPS and WSS',
  },
  { env: 'ROLLPLANE_TLS_KEY', flag: '--tls-key', default: 'none', description: 'PEM private key file for ROLLPLANE_TLS_CERT' },
  {
    env: 'ROLLPLANE_CORS_ORIGINS',
    flag: '--cors-origins',
    default: 'none (CORS off)',
    description: 'Comma-separated origins allowed to call the API from a browser',
  },
  {
    env: 'ROLLPLANE_MAX_BODY_BYTES',
    flag: '--max-body-bytes',
    default: '262144',
    description: 'Largest GraphQL request body (the largest input, a 64 KiB specPatch, fits many times over)',
  },
  { env: 'ROLLPLANE_MAX_QUERY_DEPTH', flag: '--max-query-depth', default: '12', description: 'Deepest selection nesting a query may have' },
  { env: 'ROLLPLANE_MAX_ALIASES', flag: '--max-aliases', default: '30', description: 'Most aliases one operation may use' },
  {
    env: 'ROLLPLANE_MAX_QUERY_COST',
    flag: '--max-query-cost',
    default: '20000',
    description: 'Highest estimated cost (fields × requested page sizes) of one operation',
  },
  {
    env: 'ROLLPLANE_MAX_QUERY_TOKENS',
    flag: '--max-query-tokens',
    default: '2000',
    description: 'Most lexical tokens one GraphQL document may hold (bounds parsing and validation before the other limits apply)',
  },
  {
    env: 'ROLLPLANE_PUBLIC_URL',
    flag: '--public-url',
    default: 'none',
    description:
      'The URL people reach this rollplane at (e.g. `https://rollplane.example.com`): the CloudEvents `source` of notifications (`urn:rollplane` without it) and the base of links in Slack messages',
  },
  {
    env: 'ROLLPLANE_NOTIFY_ALLOW_NETWORKS',
    flag: '--notify-allow-networks',
    default: 'none',
    description:
      'Comma-separated networks (CIDR) that notification sinks may reach although they are not public: loopback, private, link-local and reserved addresses are refused otherwise (e.g. `10.20.0.0/16` for an internal receiver)',
  },
  {
    env: 'ROLLPLANE_NOTIFY_TIMEOUT_MS',
    flag: '--notify-timeout-ms',
    default: '10000',
    description: 'Longest one notification attempt may take (connect, send, answer)',
  },
  {
    env: 'ROLLPLANE_NOTIFY_MAX_ATTEMPTS',
    flag: '--notify-max-attempts',
    default: '10',
    description: 'Attempts of one notification before it is dead-lettered (visible, and replayable)',
  },
  {
    env: 'ROLLPLANE_NOTIFY_BACKOFF_MS',
    flag: '--notify-backoff-ms',
    default: '5000',
    description: 'Wait after a failed notification attempt; doubled each time (with jitter) up to ROLLPLANE_NOTIFY_BACKOFF_MAX_MS',
  },
  {
    env: 'ROLLPLANE_NOTIFY_BACKOFF_MAX_MS',
    flag: '--notify-backoff-max-ms',
    default: '3600000',
    description: 'Longest wait between two attempts of a notification',
  },
  {
    env: 'ROLLPLANE_NOTIFY_CONCURRENCY',
    flag: '--notify-concurrency',
    default: '8',
    description: 'Notifications of one subscription in flight at once (the leader sends; one subscription never waits for another)',
  },
  {
    env: 'ROLLPLANE_NOTIFY_RETENTION_DAYS',
    flag: '--notify-retention-days',
    default: '30',
    description: 'Deliveries that are no longer pending are pruned this many days after they were written (hourly and at start)',
  },
];

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface LoadConfigContext {
  /** Lets tests pretend a file exists (kubeconfig, service-account token). */
  fileExists?: (file: string) => boolean;
  homeDir?: string;
  /** Whether stdout is a terminal (decides the default log format). */
  isTty?: boolean;
  /** Lets tests supply file contents (ROLLPLANE_ADMIN_TOKEN_FILE). */
  readFile?: (file: string) => string;
}

function integer(setting: string, raw: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(setting, `must be an integer between ${min} and ${max} (got "${raw}")`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(setting, `must be between ${min} and ${max} (got ${value})`);
  return value;
}

/** `deployment` was removed (issue 14): it is named in the error so an old setting fails loudly, not silently. */
function agentMode(raw: string): 'auto' | 'coexist' | 'direct' {
  if (raw === 'deployment') {
    throw new ConfigError(
      'ROLLPLANE_AGENT_MODE',
      'the deployment mode was removed: it needed an unreleased agent build and wrote status.agentDeploymentRef, which the IPPool CRD prunes; use auto, coexist or direct',
    );
  }
  // `pod` was the old name of what is now direct mode beside no controller: auto does that and more.
  return oneOf('ROLLPLANE_AGENT_MODE', raw === 'pod' ? 'auto' : raw, ['auto', 'coexist', 'direct'] as const);
}

function vmDhcpControllerRef(raw: string): { vmDhcpController?: { namespace: string; name: string } } {
  if (raw === 'auto') return {};
  const parts = raw.split('/');
  if (parts.length !== 2 || !DNS_LABEL_RE.test(parts[0]!) || !DNS_LABEL_RE.test(parts[1]!)) {
    throw new ConfigError('ROLLPLANE_VMDHCP_CONTROLLER', `expected auto or namespace/name of a Deployment (got "${raw.slice(0, 80)}")`);
  }
  return { vmDhcpController: { namespace: parts[0]!, name: parts[1]! } };
}

const DNS_LABEL_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function oneOf<T extends string>(setting: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(setting, `must be one of ${allowed.join(', ')} (got "${raw}")`);
  }
  return raw as T;
}

/**
 * Reads, validates and freezes the configuration. Throws ConfigError naming the setting (env name) on the first bad
 * value; unknown flags are refused too.
 */
export function loadConfig(env: NodeJS.ProcessEnv, argv: readonly string[], context: LoadConfigContext = {}): Config {
  const fileExists = context.fileExists ?? existsSync;
  const homeDir = context.homeDir ?? os.homedir();
  let flags: Record<string, string | undefined>;
  try {
    const options = Object.fromEntries(SETTINGS.map((s) => [s.flag.slice(2), { type: 'string' as const }]));
    flags = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Record<string, string | undefined>;
  } catch (error) {
    throw new ConfigError('command line', (error as Error).message);
  }
  const read = (name: string): string | undefined => {
    const setting = SETTINGS.find((s) => s.env === name)!;
    const value = flags[setting.flag.slice(2)] ?? env[name];
    return value === undefined || value === '' ? undefined : value;
  };

  const port = integer('PORT', read('PORT') ?? '4000', 0, 65535);
  const host = read('HOST') ?? '127.0.0.1';
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(host)) throw new ConfigError('HOST', `not a host name or IP address (got "${host}")`);
  const databaseUrl = read('DATABASE_URL') ?? 'file:./data/rollplane.db';
  try {
    parseDatabaseUrl(databaseUrl);
  } catch (error) {
    if (error instanceof DatabaseUrlError) throw new ConfigError('DATABASE_URL', error.message);
    throw error;
  }
  const logLevel = oneOf<LogLevel>('LOG_LEVEL', read('LOG_LEVEL') ?? 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
  const logFormat = oneOf<LogFormat>('LOG_FORMAT', read('LOG_FORMAT') ?? (context.isTty ? 'pretty' : 'json'), ['json', 'pretty']);

  const explicitKubeconfig = read('KUBECONFIG');
  const defaultKubeconfig = path.join(homeDir, '.kube', 'config');
  const kubeconfigPath = explicitKubeconfig ?? (fileExists(defaultKubeconfig) ? defaultKubeconfig : undefined);
  const rawMode = read('ROLLPLANE_KUBE');
  const mode: KubeMode = rawMode
    ? oneOf<KubeMode>('ROLLPLANE_KUBE', rawMode, ['sim', 'kubeconfig', 'in-cluster'])
    : kubeconfigPath
      ? 'kubeconfig'
      : fileExists(SERVICE_ACCOUNT_TOKEN)
        ? 'in-cluster'
        : 'sim';
  if (mode === 'kubeconfig') {
    if (!kubeconfigPath) throw new ConfigError('KUBECONFIG', 'ROLLPLANE_KUBE=kubeconfig needs KUBECONFIG or ~/.kube/config');
    // KUBECONFIG may be a list of files (path-separated), as kubectl allows; each must exist.
    for (const file of kubeconfigPath.split(path.delimiter)) {
      if (!fileExists(file)) throw new ConfigError('KUBECONFIG', `file not found: ${file}`);
    }
  }
  const qps = integer('ROLLPLANE_KUBE_QPS', read('ROLLPLANE_KUBE_QPS') ?? '50', 1, 100_000);
  const burst = integer('ROLLPLANE_KUBE_BURST', read('ROLLPLANE_KUBE_BURST') ?? '100', 1, 100_000);
  const controllers = oneOf('ROLLPLANE_CONTROLLERS', read('ROLLPLANE_CONTROLLERS') ?? 'on', ['on', 'off']) === 'on';
  const rolloutWorkers = integer('ROLLPLANE_ROLLOUT_WORKERS', read('ROLLPLANE_ROLLOUT_WORKERS') ?? '4', 1, 256);
  const leaderElect = oneOf('ROLLPLANE_LEADER_ELECT', read('ROLLPLANE_LEADER_ELECT') ?? 'true', ['true', 'false']) === 'true';
  const leaseNamespace = read('ROLLPLANE_LEASE_NAMESPACE') ?? 'rollplane-system';
  const leaseName = read('ROLLPLANE_LEASE_NAME') ?? 'rollplane-controller';
  for (const [setting, value] of [
    ['ROLLPLANE_LEASE_NAMESPACE', leaseNamespace],
    ['ROLLPLANE_LEASE_NAME', leaseName],
  ] as const) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value)) throw new ConfigError(setting, `must be a DNS-1123 label (got "${value}")`);
  }
  const leaseDurationMs = integer('ROLLPLANE_LEASE_DURATION_MS', read('ROLLPLANE_LEASE_DURATION_MS') ?? '15000', 1000, 3_600_000);
  const renewDeadlineMs = integer('ROLLPLANE_LEASE_RENEW_DEADLINE_MS', read('ROLLPLANE_LEASE_RENEW_DEADLINE_MS') ?? '10000', 500, 3_600_000);
  const retryPeriodMs = integer('ROLLPLANE_LEASE_RETRY_PERIOD_MS', read('ROLLPLANE_LEASE_RETRY_PERIOD_MS') ?? '2000', 100, 3_600_000);
  if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs)) {
    throw new ConfigError(
      'ROLLPLANE_LEASE_RENEW_DEADLINE_MS',
      `lease duration (${leaseDurationMs}) > renew deadline (${renewDeadlineMs}) > retry period (${retryPeriodMs}) must hold`,
    );
  }
  const dns1123 = (setting: string, value: string) => {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value)) throw new ConfigError(setting, `must be a DNS-1123 label (got "${value}")`);
    return value;
  };
  const dns1123Subdomain = (setting: string, value: string) => {
    if (value.length > 253 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(value)) {
      throw new ConfigError(setting, `must be a DNS-1123 subdomain (got "${value}")`);
    }
    return value;
  };
  const agentImage = read('ROLLPLANE_AGENT_IMAGE') ?? 'rancher/harvester-vm-dhcp-agent:v1.8.1';
  try {
    parseImageReference(agentImage, 'ROLLPLANE_AGENT_IMAGE');
  } catch (error) {
    throw new ConfigError('ROLLPLANE_AGENT_IMAGE', (error as Error).message.replace(/^ROLLPLANE_AGENT_IMAGE: /, ''));
  }
  const stuckRaw = read('ROLLPLANE_AGENT_STUCK_GRACE_SECONDS') ?? '120';
  const agentPools = {
    mode: agentMode(read('ROLLPLANE_AGENT_MODE') ?? 'auto'),
    ...vmDhcpControllerRef(read('ROLLPLANE_VMDHCP_CONTROLLER') ?? 'auto'),
    agentNamespace: dns1123('ROLLPLANE_AGENT_NAMESPACE', read('ROLLPLANE_AGENT_NAMESPACE') ?? 'harvester-system'),
    agentImage,
    serviceAccountName: dns1123Subdomain('ROLLPLANE_AGENT_SERVICE_ACCOUNT', read('ROLLPLANE_AGENT_SERVICE_ACCOUNT') ?? 'harvester-vm-dhcp-controller-agent'),
    stuckGraceSeconds: stuckRaw === 'off' ? null : integer('ROLLPLANE_AGENT_STUCK_GRACE_SECONDS', stuckRaw, 0, 86_400),
    workers: integer('ROLLPLANE_AGENT_WORKERS', read('ROLLPLANE_AGENT_WORKERS') ?? '16', 1, 256),
  };
  const daemonSets = (read('ROLLPLANE_NODE_AGENT_DAEMONSETS') ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter(Boolean);
  for (const ds of daemonSets) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/.test(ds)) {
      throw new ConfigError('ROLLPLANE_NODE_AGENT_DAEMONSETS', `"${ds}" is not namespace/name`);
    }
  }
  const nodeAgents = {
    daemonSets,
    peerRuntimeClass: dns1123('ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS', read('ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS') ?? 'kata-remote'),
    workers: integer('ROLLPLANE_NODE_AGENT_WORKERS', read('ROLLPLANE_NODE_AGENT_WORKERS') ?? '4', 1, 256),
  };
  const virtualClusters = {
    partialUpgrade: oneOf('ROLLPLANE_VC_PARTIAL_UPGRADE', read('ROLLPLANE_VC_PARTIAL_UPGRADE') ?? 'true', ['true', 'false']) === 'true',
    readyTimeoutMs: integer('ROLLPLANE_VC_READY_TIMEOUT_SECONDS', read('ROLLPLANE_VC_READY_TIMEOUT_SECONDS') ?? '600', 1, 86_400) * 1000,
    pollIntervalMs: integer('ROLLPLANE_VC_POLL_SECONDS', read('ROLLPLANE_VC_POLL_SECONDS') ?? '2', 1, 3600) * 1000,
    keyAlgorithm: oneOf('ROLLPLANE_VC_KEY_ALGORITHM', read('ROLLPLANE_VC_KEY_ALGORITHM') ?? 'rsa-2048', ['ecdsa-p256', 'rsa-2048'] as const),
    vcManager: vcManagerRef(read('ROLLPLANE_VC_MANAGER') ?? 'vc-manager/vc-manager'),
    workers: integer('ROLLPLANE_VC_WORKERS', read('ROLLPLANE_VC_WORKERS') ?? '10', 1, 256),
  };
  const fleet = read('ROLLPLANE_SIM_FLEET') ?? 'demo';
  if (!/^(demo|empty|[a-z]+=\d+(,[a-z]+=\d+)*)(,upstream=(none|[a-z:-]+(\+[a-z:-]+)*))?$/.test(fleet) || !validUpstream(fleet)) {
    throw new ConfigError(
      'ROLLPLANE_SIM_FLEET',
      `must be demo, empty or sizes like pools=1000,nodes=50, optionally followed by ,upstream=<${UPSTREAM_TOKENS.join('|')}>[+...] (got "${fleet}")`,
    );
  }
  const shutdownTimeoutMs = integer('ROLLPLANE_SHUTDOWN_TIMEOUT_MS', read('ROLLPLANE_SHUTDOWN_TIMEOUT_MS') ?? '10000', 100, 600_000);

  const authMode = oneOf('ROLLPLANE_AUTH', read('ROLLPLANE_AUTH') ?? 'auto', ['auto', 'on', 'off']);
  const authEnabled = authMode === 'on' || (authMode === 'auto' && !isLoopback(host));
  if (!authEnabled && !isLoopback(host)) {
    throw new ConfigError('ROLLPLANE_AUTH', `authentication may be off only when HOST is a loopback address (HOST is "${host}")`);
  }
  const adminTokenFile = read('ROLLPLANE_ADMIN_TOKEN_FILE');
  const adminTokenFromArgs = flags['admin-token'];
  if (adminTokenFile !== undefined && read('ROLLPLANE_ADMIN_TOKEN') !== undefined) {
    throw new ConfigError('ROLLPLANE_ADMIN_TOKEN_FILE', 'set either ROLLPLANE_ADMIN_TOKEN or ROLLPLANE_ADMIN_TOKEN_FILE, not both');
  }
  let adminToken = read('ROLLPLANE_ADMIN_TOKEN');
  if (adminTokenFile !== undefined) {
    try {
      adminToken = (context.readFile ?? ((file: string) => readFileSync(file, 'utf8')))(adminTokenFile).replace(/\r?\n$/, '');
    } catch (error) {
      throw new ConfigError('ROLLPLANE_ADMIN_TOKEN_FILE', `cannot read ${adminTokenFile}: ${(error as Error).message}`);
    }
  }
  const adminTokenSetting = adminTokenFile !== undefined ? 'ROLLPLANE_ADMIN_TOKEN_FILE' : 'ROLLPLANE_ADMIN_TOKEN';
  if (adminToken !== undefined && (adminToken.length < 32 || adminToken.length > 256 || !/^[\x21-\x7e]+$/.test(adminToken))) {
    throw new ConfigError(adminTokenSetting, 'must be 32 to 256 printable ASCII characters without spaces');
  }
  const adminTokenSource = adminTokenFile !== undefined ? 'file' : adminTokenFromArgs !== undefined && adminTokenFromArgs !== '' ? 'flag' : 'env';
  const mutationsPerMinute = integer('ROLLPLANE_MUTATIONS_PER_MINUTE', read('ROLLPLANE_MUTATIONS_PER_MINUTE') ?? '60', 1, 1_000_000);
  const mutationBurst = integer('ROLLPLANE_MUTATION_BURST', read('ROLLPLANE_MUTATION_BURST') ?? '20', 1, 1_000_000);
  const queryCostPerMinute = integer('ROLLPLANE_QUERY_COST_PER_MINUTE', read('ROLLPLANE_QUERY_COST_PER_MINUTE') ?? '600000', 1, 1_000_000_000);
  const queryCostBurst = integer('ROLLPLANE_QUERY_COST_BURST', read('ROLLPLANE_QUERY_COST_BURST') ?? '100000', 1, 1_000_000_000);
  const maxConnectionsPerClient = integer('ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT', read('ROLLPLANE_MAX_CONNECTIONS_PER_CLIENT') ?? '64', 1, 100_000);
  const maxSubscriptionsPerConnection = integer(
    'ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION',
    read('ROLLPLANE_MAX_SUBSCRIPTIONS_PER_CONNECTION') ?? '100',
    1,
    100_000,
  );
  const subscriptionFanOut = oneOf('ROLLPLANE_SUBSCRIPTION_FAN_OUT', read('ROLLPLANE_SUBSCRIPTION_FAN_OUT') ?? 'shared', ['shared', 'per-subscriber']);
  const compileAfterRaw = read('ROLLPLANE_GRAPHQL_COMPILE_AFTER') ?? '2';
  const graphqlCompileAfter = compileAfterRaw === 'off' ? null : integer('ROLLPLANE_GRAPHQL_COMPILE_AFTER', compileAfterRaw, 0, 1_000_000);
  const responseCacheBytes = integer('ROLLPLANE_RESPONSE_CACHE_MB', read('ROLLPLANE_RESPONSE_CACHE_MB') ?? '16', 0, 4096) * 1024 * 1024;
  const wsMaxBufferedBytes = integer('ROLLPLANE_WS_MAX_BUFFERED_BYTES', read('ROLLPLANE_WS_MAX_BUFFERED_BYTES') ?? '1048576', 1024, 1024 * 1024 * 1024);
  const auditRetentionDays = integer('ROLLPLANE_AUDIT_RETENTION_DAYS', read('ROLLPLANE_AUDIT_RETENTION_DAYS') ?? '90', 1, 36_500);
  const auditMaxEntries = integer('ROLLPLANE_AUDIT_MAX_ENTRIES', read('ROLLPLANE_AUDIT_MAX_ENTRIES') ?? '100000', 100, 1_000_000_000);
  const certFile = read('ROLLPLANE_TLS_CERT');
  const keyFile = read('ROLLPLANE_TLS_KEY');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(certFile ? 'ROLLPLANE_TLS_KEY' : 'ROLLPLANE_TLS_CERT', 'TLS needs both ROLLPLANE_TLS_CERT and ROLLPLANE_TLS_KEY');
  }
  for (const [setting, file] of [
    ['ROLLPLANE_TLS_CERT', certFile],
    ['ROLLPLANE_TLS_KEY', keyFile],
  ] as const) {
    if (file !== undefined && !fileExists(file)) throw new ConfigError(setting, `file not found: ${file}`);
  }
  const corsOrigins = (read('ROLLPLANE_CORS_ORIGINS') ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(origin)) {
      throw new ConfigError('ROLLPLANE_CORS_ORIGINS', `"${origin}" is not an origin such as https://ui.example.com`);
    }
  }
  const limits = {
    maxBodyBytes: integer('ROLLPLANE_MAX_BODY_BYTES', read('ROLLPLANE_MAX_BODY_BYTES') ?? '262144', 1024, 100 * 1024 * 1024),
    maxQueryDepth: integer('ROLLPLANE_MAX_QUERY_DEPTH', read('ROLLPLANE_MAX_QUERY_DEPTH') ?? '12', 2, 100),
    maxAliases: integer('ROLLPLANE_MAX_ALIASES', read('ROLLPLANE_MAX_ALIASES') ?? '30', 0, 10_000),
    maxQueryCost: integer('ROLLPLANE_MAX_QUERY_COST', read('ROLLPLANE_MAX_QUERY_COST') ?? '20000', 10, 100_000_000),
    maxQueryTokens: integer('ROLLPLANE_MAX_QUERY_TOKENS', read('ROLLPLANE_MAX_QUERY_TOKENS') ?? '2000', 100, 1_000_000),
  };
  const allowNetworks = (read('ROLLPLANE_NOTIFY_ALLOW_NETWORKS') ?? 'none')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n && n !== 'none');
  for (const network of allowNetworks) {
    const [address, prefix, extra] = network.split('/');
    const family = isIP(address ?? '');
    if (extra !== undefined || family === 0 || !/^\d{1,3}$/.test(prefix ?? '') || Number(prefix) > (family === 4 ? 32 : 128)) {
      throw new ConfigError('ROLLPLANE_NOTIFY_ALLOW_NETWORKS', `"${network.slice(0, 80)}" is not a network such as 10.20.0.0/16 or fd00::/8`);
    }
  }
  const notifications = {
    allowNetworks,
    timeoutMs: integer('ROLLPLANE_NOTIFY_TIMEOUT_MS', read('ROLLPLANE_NOTIFY_TIMEOUT_MS') ?? '10000', 100, 120_000),
    maxAttempts: integer('ROLLPLANE_NOTIFY_MAX_ATTEMPTS', read('ROLLPLANE_NOTIFY_MAX_ATTEMPTS') ?? '10', 1, 100),
    backoffBaseMs: integer('ROLLPLANE_NOTIFY_BACKOFF_MS', read('ROLLPLANE_NOTIFY_BACKOFF_MS') ?? '5000', 1, 86_400_000),
    backoffMaxMs: integer('ROLLPLANE_NOTIFY_BACKOFF_MAX_MS', read('ROLLPLANE_NOTIFY_BACKOFF_MAX_MS') ?? '3600000', 1, 7 * 86_400_000),
    concurrency: integer('ROLLPLANE_NOTIFY_CONCURRENCY', read('ROLLPLANE_NOTIFY_CONCURRENCY') ?? '8', 1, 256),
    retentionDays: integer('ROLLPLANE_NOTIFY_RETENTION_DAYS', read('ROLLPLANE_NOTIFY_RETENTION_DAYS') ?? '30', 1, 36_500),
  };
  if (notifications.backoffMaxMs < notifications.backoffBaseMs) {
    throw new ConfigError('ROLLPLANE_NOTIFY_BACKOFF_MAX_MS', `must be at least ROLLPLANE_NOTIFY_BACKOFF_MS (${notifications.backoffBaseMs})`);
  }
  const publicUrlRaw = read('ROLLPLANE_PUBLIC_URL');
  let publicUrl: string | undefined;
  if (publicUrlRaw !== undefined && publicUrlRaw !== 'none') {
    if (!/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(publicUrlRaw)) {
      throw new ConfigError(
        'ROLLPLANE_PUBLIC_URL',
        `must be an http(s) URL without query or fragment, such as https://rollplane.example.com (got "${publicUrlRaw.slice(0, 80)}")`,
      );
    }
    publicUrl = publicUrlRaw.replace(/\/+$/, '');
  }
  if (queryCostBurst < limits.maxQueryCost) {
    throw new ConfigError(
      'ROLLPLANE_QUERY_COST_BURST',
      `must be at least ROLLPLANE_MAX_QUERY_COST (${limits.maxQueryCost}), or the largest allowed query could never run (got ${queryCostBurst})`,
    );
  }

  return deepFreeze({
    port,
    host,
    databaseUrl,
    logLevel,
    logFormat,
    kube: { mode, ...(mode === 'kubeconfig' ? { kubeconfigPath } : {}), qps, burst },
    controllers,
    rollouts: { workers: rolloutWorkers },
    leaderElection: { enabled: leaderElect, namespace: leaseNamespace, name: leaseName, leaseDurationMs, renewDeadlineMs, retryPeriodMs },
    agentPools,
    nodeAgents,
    virtualClusters,
    sim: { fleet },
    shutdownTimeoutMs,
    auth: {
      enabled: authEnabled,
      ...(adminToken ? { adminToken, adminTokenSource } : {}),
      mutationsPerMinute,
      mutationBurst,
      queryCostPerMinute,
      queryCostBurst,
      maxConnectionsPerClient,
      maxSubscriptionsPerConnection,
      subscriptionFanOut,
      graphqlCompileAfter,
      responseCacheBytes,
      wsMaxBufferedBytes,
      auditRetentionDays,
      auditMaxEntries,
    },
    notifications,
    ...(publicUrl ? { publicUrl } : {}),
    ...(certFile && keyFile ? { tls: { certFile, keyFile } } : {}),
    corsOrigins,
    limits,
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** The `upstream=` part of a fleet spec names only known behaviours. */
function validUpstream(fleet: string): boolean {
  const part = fleet.split(',').find((p) => p.startsWith('upstream='));
  if (!part) return true;
  try {
    parseUpstreamSpec(part.slice('upstream='.length));
    return true;
  } catch {
    return false;
  }
}

/** `namespace/name` of the vc-manager Deployment, or `none`. */
function vcManagerRef(text: string): { namespace: string; name: string } | null {
  if (text === 'none') return null;
  const match = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(text);
  if (!match) throw new ConfigError('ROLLPLANE_VC_MANAGER', `"${text.slice(0, 80)}" is not namespace/name or none`);
  return { namespace: match[1]!, name: match[3]! };
}
