import type { TokenService } from '../auth/TokenService.js';
import type { AuditLog } from './AuditLog.js';
import type { AgentPoolQueries } from './agentPools.js';
import type { EventLog } from './EventLog.js';
import type { NodeAgentQueries } from './nodeAgents.js';
import type { NotificationService } from './notifications/NotificationService.js';
import type { RolloutEngine } from './RolloutEngine.js';
import type { RolloutLauncher } from './RolloutLauncher.js';
import type { RolloutService } from './RolloutService.js';
import type { VirtualClusterQueries } from './virtualClusters.js';

/** Runtime facts shown by `serverInfo`. */
export interface ServerFacts {
  version: string;
  kubeMode: string;
  startedAt: Date;
}

/** A snapshot of one work queue, for the `workQueues` query. */
export interface QueueSnapshot {
  name: string;
  depth: number;
  inFlight: string[];
  retries: { key: string; retries: number; lastError: string | null }[];
  leader: boolean;
}

/**
 * The domain layer as the API sees it; the composition root fills it in. A rollout kind's query port is there when
 * the kind is registered (setupRolloutKinds); resolvers answer NOT_IMPLEMENTED for one that is not.
 */
export interface Domain {
  facts: ServerFacts;
  events: EventLog;
  rollouts: RolloutService;
  /** Turns a kind's plan into a rollout (dry run, idempotency, overlap rules); the engine hears of it through its committed event. */
  launcher: RolloutLauncher;
  /** Admission and outcomes of every rollout; `rollback` starts a rollback rollout. */
  engine: RolloutEngine;
  /** IPPools and their DHCP agents (cluster state from the agent-pool controllers' caches); absent when not set up. */
  agentPools?: AgentPoolQueries;
  /** Node-agent DaemonSets (src/controllers/nodeAgent); absent until wired. */
  nodeAgents?: NodeAgentQueries;
  /** VirtualClusters and ClusterVersions (src/controllers/virtualCluster caches); absent until wired. */
  virtualClusters?: VirtualClusterQueries;
  /** API tokens (admin). */
  tokens: TokenService;
  /** Audit log of mutations (admin). */
  audit: AuditLog;
  /** Notification subscriptions and their deliveries (admin). */
  notifications: NotificationService;
  /** Work-queue snapshots of the running controllers (empty when none run on this replica). */
  workQueues(): QueueSnapshot[];
}
