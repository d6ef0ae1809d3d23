/**
 * Kubernetes' version priority (apimachinery's kube-aware version order): names shaped like `v1`, `v2beta1`,
 * `v1alpha2` rank above every other name; among them GA > beta > alpha, then the higher major, then the higher
 * minor; other names rank by reverse string order. Discovery lists a group's versions in this order and its
 * preferredVersion is the first.
 */
const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/;
const STABILITY: Record<string, number> = { alpha: 0, beta: 1, '': 2 };

interface Parsed {
  major: number;
  stability: number;
  minor: number;
}

function parse(version: string): Parsed | undefined {
  const match = KUBE_VERSION.exec(version);
  if (!match) return undefined;
  return { major: Number(match[1]), stability: STABILITY[match[2] ?? '']!, minor: Number(match[3] ?? 0) };
}

/** Positive when `a` has the higher priority, negative when `b` has, 0 when equal. */
export function compareKubeAwareVersions(a: string, b: string): number {
  if (a === b) return 0;
  const pa = parse(a);
  const pb = parse(b);
  if (!pa && !pb) return a < b ? 1 : -1;
  if (!pa) return -1;
  if (!pb) return 1;
  if (pa.stability !== pb.stability) return pa.stability - pb.stability;
  if (pa.major !== pb.major) return pa.major - pb.major;
  return pa.minor - pb.minor;
}

/** `versions` sorted highest priority first (a new array). */
export function byVersionPriority(versions: readonly string[]): string[] {
  return [...versions].sort((a, b) => compareKubeAwareVersions(b, a));
}
