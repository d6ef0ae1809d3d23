import type { AnalysisStore } from '../analysis/model.js';
import type { AnalysisTemplates } from '../analysis/namedTemplates.js';
import type { Principal } from '../auth/roles.js';
import type { Domain } from '../domain/Domain.js';
import type { ReplayCharge } from '../domain/EventLog.js';
import { callerKey } from './guard.js';
import type { Logger } from '../log.js';

/** What every resolver receives. Resolvers reach the world only through `domain`. */
export interface GraphQLContext {
  domain: Domain;
  logger: Logger;
  /** Who is calling (anonymous only when authentication is off). */
  principal: Principal;
  /** The client's address, for the audit log. */
  sourceAddress: string | null;
  /** Analysis runs and their measurements (ANALYSIS gates, ADR 0067/0068), as the API reads them. */
  analysis?: Pick<AnalysisStore, 'gateRuns' | 'measurementsOf'>;
  /** Analysis templates by name (ADR 0071). */
  analysisTemplates?: AnalysisTemplates;
  /** A subscription's: charges the events its `after:` replays to the caller's budget (set by the WebSocket server). */
  chargeReplay?: ReplayCharge;
}

/**
 * Whose idempotency keys a request's are: its caller's, by the key its rate limits use (per token; every
 * unauthenticated local caller is one). One caller cannot claim or reuse another's key (issue 34, finding 7).
 */
export function idempotencyScopeOf(ctx: GraphQLContext): string {
  return callerKey(ctx.principal);
}
