import type { DriftItem } from '../../domain/drift.js';
import { pageDrift } from '../../domain/drift.js';
import type { Resolvers } from '../generated/resolvers.js';
import type { KindApi } from '../kindApi.js';
import { connectionOf } from './connection.js';

/** `drift`: every registered kind's drifted targets (or one kind's), as one page ordered by kind, namespace, name. */
export function driftResolvers(kinds: readonly KindApi[]): Resolvers {
  return {
    Query: {
      drift: async (_, args, ctx) => {
        const items: DriftItem[] = [];
        for (const kind of kinds) if (!args.kind || kind.kind === args.kind) items.push(...(await kind.drift(ctx.domain)));
        return connectionOf(pageDrift(items, args.first, args.after));
      },
    },
  };
}
