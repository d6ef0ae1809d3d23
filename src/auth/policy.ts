import type { Role } from './roles.js';

/** Root fields only an admin may use; every other mutation needs `deployer`, every other query or subscription `viewer`. */
const ADMIN_FIELDS = new Set([
  'apiTokens',
  'auditEntries',
  'createApiToken',
  'revokeApiToken',
  // Notifications: a sink receives every matching event and is called by the server itself (docs/adr/0035).
  'notificationSubscriptions',
  'notificationSubscription',
  'notificationDeliveries',
  'createNotificationSubscription',
  'updateNotificationSubscription',
  'deleteNotificationSubscription',
  'replayNotificationDelivery',
  'replayNotificationDeliveries',
  // Member clusters: a registration hands rollplane credentials and makes it connect somewhere (docs/adr/0056).
  'registerCluster',
  'updateClusterLabels',
  'deregisterCluster',
  // Maintenance windows hold or release every rollout of the fleet (issue 30).
  'createMaintenanceWindow',
  'updateMaintenanceWindow',
  'deleteMaintenanceWindow',
]);
/**
 * The role a root field needs. `dryRun`: the mutation offers dry runs (its input has `dryRun`: the kinds' bumps, found
 * in the schema by `offersDryRun`, graphql/operationFields.ts) and this call asks for one (`input.dryRun: true`). A
 * viewer may send those: a CI preview step needs to see the plan, not deployer rights. A dry run changes nothing; like
 * every authenticated mutation it is an audit entry and spends the caller's mutation budget.
 */
export function requiredRole(operation: 'query' | 'mutation' | 'subscription', field: string, dryRun = false): Role {
  if (ADMIN_FIELDS.has(field)) return 'admin';
  if (operation === 'mutation' && dryRun) return 'viewer';
  return operation === 'mutation' ? 'deployer' : 'viewer';
}

/** Whether a root field's arguments ask for a dry run (`input: { dryRun: true }`). */
export function isDryRun(args: Readonly<Record<string, unknown>> | undefined): boolean {
  const input = args?.input;
  return typeof input === 'object' && input !== null && (input as { dryRun?: unknown }).dryRun === true;
}
