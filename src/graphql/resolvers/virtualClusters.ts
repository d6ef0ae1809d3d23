import type { IResolvers } from '@graphql-tools/utils';
import type { GraphQLContext } from '../context.js';

/** Resolvers for the virtualClusters part of the schema; they replace the NOT_IMPLEMENTED placeholders in core.ts. */
export const virtualClustersResolvers: IResolvers<unknown, GraphQLContext> = {};
