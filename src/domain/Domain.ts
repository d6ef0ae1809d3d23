import type { TokenService } from '../auth/TokenService.js';
import type { AuditLog } from './AuditLog.js';
import type { ClusterPorts } from './clusterSelection.js';
import type { MemberClusterAdmin } from './clusters/MemberClusterAdmin.js';
import type { EventLog } from './EventLog.js';
import type { NotificationService } from './notifications/NotificationService.js';
import type { RolloutEngine } from './RolloutEngine.js';
import type { RolloutLauncher } from './RolloutLauncher.js';
import type { RolloutService } from './RolloutService.js';

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
 * The query ports the rollout kinds add to the Domain, each under its own field: empty here, filled in by each kind's
 * planner (`src/kinds/<kind>/plan.ts`) by declaration merging (ADR 0045), so that the domain names no kind. A port is
 * there when its kind is registered and set up (setupRolloutKinds); resolvers answer NOT_IMPLEMENTED for one that is not.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the kinds' planners (declaration merging)
export interface KindPorts {}

/** The domain layer as the API sees it; the composition root fills it in, the kinds' query ports included. */
export interface Domain extends KindPorts {
  facts: ServerFacts;
  events: EventLog;
  rollouts: RolloutService;
  /** Turns a kind's plan into a rollout (dry run, idempotency, overlap rules); the engine hears of it through its committed event. */
  launcher: RolloutLauncher;
  /** Admission and outcomes of every rollout; `rollback` starts a rollback rollout. */
  engine: RolloutEngine;
  /** API tokens (admin). */
  tokens: TokenService;
  /** Audit log of mutations (admin). */
  audit: AuditLog;
  /** Notification subscriptions and their deliveries (admin). */
  notifications: NotificationService;
  /**
   * The member cluster registry as the API serves it (docs/adr/0056-clusters-api.md); set by the composition root once
   * the member clusters started (src/app.ts).
   */
  clusters?: MemberClusterAdmin;
  /**
   * The kinds' query ports per member cluster, what a bump across clusters plans from and a list's `cluster` reads
   * (docs/adr/0058-bump-across-clusters.md); set by the composition root. Absent: `local` alone.
   */
  clusterPorts?: ClusterPorts;
  /** Work-queue snapshots of the running controllers (empty when none run on this replica). */
  workQueues(): QueueSnapshot[];
}
