/**
 * How the edges show a rollout's `toVersion` (ADR 0046): the version, or — for a rollback whose targets each go back
 * to their own previous version (null) — this text, which the API has always shown there. The one place it is
 * written: the domain, the store and the events carry null.
 */
export const EACH_PREVIOUS_REVISION = 'previous revision of each target';

export function toVersionText(toVersion: string | null): string {
  return toVersion ?? EACH_PREVIOUS_REVISION;
}
