import { AppError, ErrorCode } from '../../errors.js';
import type { AnalysisTemplates } from '../../analysis/namedTemplates.js';
import type { GraphQLContext } from '../context.js';
import type { Resolvers } from '../generated/resolvers.js';

/** Analysis templates by name (issue 33, ADR 0071): the API over AnalysisTemplates. */
function templatesOf(ctx: GraphQLContext): AnalysisTemplates {
  if (!ctx.analysisTemplates) throw new AppError(ErrorCode.Unavailable, 'analysis templates are not available in this rollplane');
  return ctx.analysisTemplates;
}

export const analysisTemplatesResolvers: Resolvers = {
  Query: {
    analysisTemplates: (_, __, ctx) => templatesOf(ctx).list(),
    analysisTemplate: async (_, args, ctx) => (await templatesOf(ctx).get(args.name)) ?? null,
  },
  Mutation: {
    createAnalysisTemplate: (_, args, ctx) => templatesOf(ctx).create(args.input),
    updateAnalysisTemplate: (_, args, ctx) => templatesOf(ctx).update(args.input),
    deleteAnalysisTemplate: (_, args, ctx) => templatesOf(ctx).delete(args.name),
  },
  AnalysisTemplate: {
    template: (t) => JSON.parse(t.template) as unknown,
    metrics: (t) => ((JSON.parse(t.template) as { spec?: { metrics?: { name?: unknown }[] } }).spec?.metrics ?? []).map((m) => String(m.name)),
  },
};
