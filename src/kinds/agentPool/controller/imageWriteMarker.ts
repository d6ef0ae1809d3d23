/**
 * rollplane's own changes of the controller's image, told apart durably (attack 18, M2). The lever's write names the
 * rollout on the object it writes (the Deployment, or the Addon that renders it) in the same patch, with the generation
 * that patch gives it. A process that did not make the change — the replica that took a member's shard over, or this
 * one after a restart — reads it there: the change is rollplane's while the object's generation is still that one (no
 * spec change since, by helm or anyone). Before, such a process recorded rollplane's own change as one made outside
 * rollplane (`planned: false`).
 */
export const ANNOTATION_IMAGE_SET_FOR = 'rollplane.io/image-set-for';

interface Marked {
  metadata?: { annotations?: Record<string, string>; generation?: number };
}

/** The JSON patch operations that put the marker on `object` (as just read) for a write of `image` by `rolloutId`. */
export function markerOps(object: Marked, rolloutId: string, image: string): Array<{ op: 'add'; path: string; value: unknown }> {
  // The write changes the spec: the API server moves the generation on by one.
  const value = `${rolloutId} ${image} ${(object.metadata?.generation ?? 0) + 1}`;
  if (object.metadata?.annotations) return [{ op: 'add', path: `/metadata/annotations/${ANNOTATION_IMAGE_SET_FOR.replace('/', '~1')}`, value }];
  return [{ op: 'add', path: '/metadata/annotations', value: { [ANNOTATION_IMAGE_SET_FOR]: value } }];
}

/** The rollout whose write put `image` on `object`, while nothing changed its spec since; undefined otherwise. */
export function markedRollout(object: Marked | undefined, image: string): string | undefined {
  const value = object?.metadata?.annotations?.[ANNOTATION_IMAGE_SET_FOR];
  if (!value) return undefined;
  const [rolloutId, marked, generation] = value.split(' ');
  if (!rolloutId || marked !== image || Number(generation) !== object?.metadata?.generation) return undefined;
  return rolloutId;
}
