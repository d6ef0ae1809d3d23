import type { RolloutKind } from './events.js';
import { type KeyedPage, pageByKey } from '../util/pagination.js';

/** A target whose running version differs from what it should run: one item of the `drift` query, from its kind. */
export interface DriftItem {
  kind: RolloutKind;
  namespace: string;
  name: string;
  desiredVersion: string | null;
  runningVersion: string | null;
  since: Date | null;
  /** The rollout whose decision the desired version is (agent pools); null or absent when it comes from the cluster. */
  desiredBy?: string | null;
}

/** Any kinds' drift items → one page ordered by kind, namespace, name. */
export function pageDrift<T extends DriftItem>(items: T[], first?: number | null, after?: string | null): KeyedPage<T> {
  return pageByKey(items, (node) => `${node.kind}|${node.namespace}/${node.name}`, first, after, 100);
}
