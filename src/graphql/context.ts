import type { Domain } from '../domain/Domain.js';
import type { Logger } from '../log.js';

/** What every resolver receives. Resolvers reach the world only through `domain`. */
export interface GraphQLContext {
  domain: Domain;
  logger: Logger;
}
