import type { V1DaemonSet } from '@kubernetes/client-node';
import type { EventLog } from '../../../domain/EventLog.js';
import { EventType } from '../../../domain/events.js';

/** How far back a chain of consecutive changes made outside rollplane is followed. */
const CHAIN_LIMIT = 20;

export interface ExternalChange {
  /** The image the set ran before the changes made outside rollplane: the one rollplane last rolled out (or found). */
  rolledOut: string;
  /** When the first of those changes was recorded. */
  since: Date;
}

/**
 * Whether the set's template image was put there outside rollplane, from the history the ExternalChangeRecorder
 * writes: the newest UpstreamControllerChanged event of the set is unplanned and names this image. A rollout of
 * rollplane since then changed the template (no such event), so the image would differ. Consecutive external changes
 * (v1 → v2 → v3 by helm) are followed back to the image before the first one.
 */
export async function externalChangeOf(events: Pick<EventLog, 'listBefore'>, ds: V1DaemonSet, templateImage: string): Promise<ExternalChange | undefined> {
  const changes = await events.listBefore(
    { kind: 'NODE_AGENT', types: [EventType.UpstreamControllerChanged], namespace: ds.metadata?.namespace ?? '', name: ds.metadata?.name ?? '' },
    undefined,
    CHAIN_LIMIT,
  );
  let found: ExternalChange | undefined;
  let image = templateImage;
  for (const change of changes) {
    const { planned, oldImage, newImage } = change.payload;
    if (planned !== false || newImage !== image || typeof oldImage !== 'string') break;
    found = { rolledOut: oldImage, since: change.createdAt };
    image = oldImage;
  }
  // Changed away and back again: the set runs what it ran before.
  return found && found.rolledOut !== templateImage ? found : undefined;
}
