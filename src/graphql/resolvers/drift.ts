import { notRegistered, portsHere } from '../../domain/clusterSelection.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import type { DriftItem } from '../../domain/drift.js';
import { pageDrift } from '../../domain/drift.js';
import { UnavailableError } from '../../errors.js';
import type { Resolvers } from '../generated/resolvers.js';
import type { KindApi } from '../kindApi.js';
import { connectionOf } from './connection.js';

/**
 * `drift`: every registered kind's drifted targets (or one kind's) in one cluster (`local` by default, a member from
 * its caches), as one page ordered by kind, namespace, name. An unregistered cluster is BAD_USER_INPUT; a member whose
 * caches of a kind it serves cannot be read now is UNAVAILABLE, never an empty answer that reads as "no drift".
 */
export function driftResolvers(kinds: readonly KindApi[]): Resolvers {
  return {
    Query: {
      drift: async (_, args, ctx) => {
        const cluster = args.cluster ?? LOCAL_CLUSTER;
        const seam = portsHere(ctx.domain);
        if (cluster !== LOCAL_CLUSTER && !(await seam.registered()).some((c) => c.name === cluster)) {
          throw notRegistered(cluster, 'cluster');
        }
        const items: (DriftItem & { cluster: string })[] = [];
        for (const kind of kinds) {
          if (args.kind && kind.kind !== args.kind) continue;
          const answer = seam.portsOf(cluster, kind.kind);
          if ('unavailable' in answer) throw new UnavailableError(`cannot read drift in ${cluster}: ${answer.unavailable}`);
          for (const item of await kind.drift(answer.ports)) items.push({ ...item, cluster });
        }
        return connectionOf(pageDrift(items, args.first, args.after));
      },
    },
  };
}
