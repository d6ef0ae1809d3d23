/**
 * rollplane's own changes of the controller's image, told apart durably (attack 18, M2). The lever's write names the
 * rollout on the object it writes (the Deployment, or the Addon that renders it) in the same patch, with the generation
 * that patch gives it. A process that did not make the change — the replica that took a member's shard over, or this
 * one after a restart — reads it there: the change is rollplane's when the marker names the image deployed now and the
 * history has not recorded that write yet. Before, such a process recorded rollplane's own change as one made outside
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

/**
 * The rollout whose write last put `image` on `object`, as its marker says; undefined when it names another image (a
 * change since, by helm or anyone). Not whether this change is that write: a write lands once, so the caller takes it
 * as that write only while the history has not recorded it yet (ControllerImageReconciler). The generation is kept in
 * the marker for people; it is not compared: a `kubectl rollout restart` or a scale between the write and a restarted
 * process's first look moved it on, and rollplane's own change was recorded as a revert (attack 20, F4).
 */
export function markedRollout(object: Marked | undefined, image: string): string | undefined {
  const value = object?.metadata?.annotations?.[ANNOTATION_IMAGE_SET_FOR];
  if (!value) return undefined;
  const [rolloutId, marked] = value.split(' ');
  return rolloutId && marked === image ? rolloutId : undefined;
}
