import type { Role } from './roles.js';

/** Root fields only an admin may use; every other mutation needs `deployer`, every other query or subscription `viewer`. */
const ADMIN_FIELDS = new Set(['apiTokens', 'auditEntries', 'createApiToken', 'revokeApiToken']);

export function requiredRole(operation: 'query' | 'mutation' | 'subscription', field: string): Role {
  if (ADMIN_FIELDS.has(field)) return 'admin';
  return operation === 'mutation' ? 'deployer' : 'viewer';
}
