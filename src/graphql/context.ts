import type { Principal } from '../auth/roles.js';
import type { Domain } from '../domain/Domain.js';
import type { Logger } from '../log.js';

/** What every resolver receives. Resolvers reach the world only through `domain`. */
export interface GraphQLContext {
  domain: Domain;
  logger: Logger;
  /** Who is calling (anonymous only when authentication is off). */
  principal: Principal;
  /** The client's address, for the audit log. */
  sourceAddress: string | null;
}
