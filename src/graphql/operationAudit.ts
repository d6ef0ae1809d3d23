import { Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { RateLimiter } from '../auth/RateLimiter.js';
import { principalName, type Principal } from '../auth/roles.js';
import type { AuditLog } from '../domain/AuditLog.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { redactMessage, redactSecrets } from './auditRedaction.js';
import { errorCodeOf } from './errors.js';
import { callerKey } from './guard.js';
import { clusterOfMutation, rootFieldsOf } from './operationFields.js';

/** A mutation as it ended, on either transport. */
export interface MutationOutcome {
  principal: Principal;
  sourceAddress: string | null;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** Root fields the operation could run (rootFieldsOf): what the audit entry names. */
  fields: readonly string[];
  /** The operation text as sent (it carries inline arguments; variables carry the rest). */
  source: string;
  variables: Record<string, unknown> | null | undefined;
  errors: readonly { message: string; extensions?: Record<string, unknown> | undefined; originalError?: unknown }[];
}

/** The operation text kept per entry; the AuditLog bounds the whole input again. */
const MAX_OPERATION_CHARS = 2000;

/**
 * Refusals that say nothing about what the caller may do and cost an attacker nothing to repeat: they are counted in
 * metrics (rollplane_requests_refused_total), not written one row each, so nobody can fill the disk with them.
 */
const NOT_AUDITED = new Set<string>([ErrorCode.Unauthenticated, ErrorCode.RateLimited]);

/**
 * The one audit path for mutations, used by the Apollo plugin (HTTP) and the graphql-ws server (WebSocket): every
 * mutation that was authenticated and not rate-limited is an entry, accepted or refused, naming the root fields it ran.
 */
export async function auditMutation(audit: AuditLog, schema: GraphQLSchema, outcome: MutationOutcome, logger: Logger): Promise<void> {
  if (outcome.operation.operation !== 'mutation') return;
  const first = outcome.errors[0];
  const result = first ? errorCodeOf(first) : 'OK';
  if (NOT_AUDITED.has(result)) return;
  const { source, variables } = redactSecrets(outcome.source, outcome.variables, { schema, operation: outcome.operation });
  await audit
    .record({
      actor: principalName(outcome.principal),
      role: outcome.principal.role,
      operation: outcome.fields.join(',') || (outcome.operation.name?.value ?? 'mutation'),
      input: { operation: source.slice(0, MAX_OPERATION_CHARS), variables },
      result,
      message: first ? redactMessage(first.message, outcome.source, outcome.variables) : null,
      sourceAddr: outcome.sourceAddress,
      cluster: clusterOfMutation(schema, outcome.document, outcome.operation, outcome.variables),
    })
    .catch((error: unknown) => logger.error({ err: error }, 'could not write the audit entry'));
}

/**
 * A document that names mutations but never reached the guard (it failed validation, or its operation could not be
 * chosen): still an authenticated caller's attempt at those mutations, so it is audited too, naming the root fields
 * written in it. It spends the caller's mutation budget like any mutation, which bounds the rows it can write; past
 * the budget it is not written.
 */
export async function auditUnresolvedMutation(
  audit: AuditLog,
  schema: GraphQLSchema,
  mutationLimiter: RateLimiter,
  attempt: Omit<MutationOutcome, 'operation' | 'fields'> & { document: DocumentNode; operationName: string | null | undefined },
  logger: Logger,
): Promise<void> {
  const mutations = attempt.document.definitions.filter(
    (d): d is OperationDefinitionNode =>
      d.kind === Kind.OPERATION_DEFINITION && d.operation === 'mutation' && (!attempt.operationName || d.name?.value === attempt.operationName),
  );
  const first = mutations[0];
  if (!first) return;
  if ((await mutationLimiter.take(callerKey(attempt.principal))) > 0) return;
  const fields = [...new Set(mutations.flatMap((operation) => rootFieldsOf(attempt.document, operation)))];
  await auditMutation(audit, schema, { ...attempt, operation: first, fields }, logger);
}
