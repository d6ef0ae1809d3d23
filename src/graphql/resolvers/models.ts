/**
 * What resolvers return for the GraphQL object types that have field resolvers: the domain objects, as they are today.
 * scripts/codegen.mjs maps these types to them (the `mappers` option), so that the generated `Resolvers` types expect
 * a domain Rollout where the schema says `Rollout` and the Rollout field resolvers receive one as their parent. A
 * rollout kind's object types map to its own views (src/kinds/<kind>/plan.ts) in codegen.mjs, not through here.
 */
export type { Rollout as RolloutModel, RolloutTarget as RolloutTargetModel } from '../../domain/RolloutService.js';
export type { PlanItem as PlanItemModel } from '../../domain/RolloutLauncher.js';

/**
 * A rollout's typed strategy (defaults filled in by its kind's contract). `RolloutStrategy`'s shared fields resolve by
 * name; the fields of one kind are resolved by that kind's `graphql.ts` (ADR 0045), so no shared code maps them.
 */
export type { RolloutStrategy as RolloutStrategyModel } from '../../domain/kinds/index.js';

/** One revision of a target (RolloutService.revisions); `rollout` is resolved from its id. */
export interface RevisionModel {
  n: number;
  version: string;
  rolloutId: string | null;
  appliedAt: Date;
}

/** An audit row as AuditLog.list returns it (numeric id, role as stored); the ID scalar and Role enum serialize it. */
export type AuditEntryModel = Awaited<ReturnType<import('../../domain/AuditLog.js').AuditLog['list']>>['items'][number];

/** A notification subscription as the API shows it (no secret); its `deliveries` counts are resolved per page. */
export type {
  SubscriptionView as NotificationSubscriptionModel,
  DeliveryView as NotificationDeliveryModel,
} from '../../domain/notifications/NotificationService.js';

/** A member cluster as its record maps to the API (resolvers/clusters.ts); its kinds' figures are resolved per query. */
export type MemberClusterModel = Omit<import('../generated/resolvers.js').MemberCluster, 'kindFigures' | 'maintenanceWindow'>;

/** A gate as StagedRuns.gates reads it (its row, decisions, attempts and progress); its lists resolve from it. */
export type { GateView as GateModel } from '../../domain/waves/StagedRuns.js';

/** An analysis run as recorded (its measurements resolve from its id). */
export type { AnalysisRunRecord as AnalysisRunModel } from '../../analysis/model.js';
