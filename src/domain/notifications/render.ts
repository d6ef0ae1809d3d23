import { readPayload } from '../eventPayloads.js';
import { clusterOfEvent, EventType, type StoredEvent } from '../events.js';
import { LOCAL_CLUSTER } from '../clusters/model.js';
import { toVersionText } from '../toVersionText.js';
import { notificationTypeOf, stateOf } from './routing.js';

/**
 * What a sink receives, rendered from the committed event alone (its row, read when the delivery is sent): never from
 * a cache or from the rollout's state at sending time, so a message says what happened when it happened — no
 * "Succeeded" for a rollout still running (argo-cd#28926), no field of a newer or older object (argo-rollouts#3535).
 */

/** A CloudEvents 1.0 event in structured mode (`application/cloudevents+json`). */
export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject?: string;
  time: string;
  datacontenttype: 'application/json';
  data: {
    id: string;
    type: EventType;
    rolloutId: string | null;
    kind: string | null;
    namespace: string | null;
    name: string | null;
    /** The member cluster of the object the event is about (`local` for rollplane's own); null for a rollout's own. */
    cluster: string | null;
    payload: Record<string, unknown>;
    createdAt: string;
  };
}

export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

/** `rollouts/<id>`, or the object the event is about (`<kind>/<namespace>/<name>`), or none. */
function subjectOf(event: StoredEvent): string | undefined {
  if (event.rolloutId) return `rollouts/${event.rolloutId}`;
  if (event.name) return `${event.kind ?? 'objects'}/${event.namespace ? `${event.namespace}/` : ''}${event.name}`;
  return undefined;
}

/**
 * `id` is the event id: unique per `source`, the same on every attempt and every replica, so a receiver deduplicates
 * on it (it is also sent as the Idempotency-Key header).
 */
export function cloudEventOf(event: StoredEvent, source: string): CloudEvent {
  const subject = subjectOf(event);
  return {
    specversion: '1.0',
    id: String(event.id),
    source,
    type: notificationTypeOf(event),
    ...(subject ? { subject } : {}),
    time: event.createdAt.toISOString(),
    datacontenttype: 'application/json',
    data: {
      id: String(event.id),
      type: event.type,
      rolloutId: event.rolloutId,
      kind: event.kind,
      namespace: event.namespace,
      name: event.name,
      cluster: clusterOfEvent(event),
      payload: event.payload,
      createdAt: event.createdAt.toISOString(),
    },
  };
}

/** A Slack message (incoming webhook or chat.postMessage body). */
export interface SlackMessage {
  text: string;
  thread_ts?: string;
  channel?: string;
  unfurl_links: false;
  unfurl_media: false;
}

/** Slack's control characters: text from events cannot open a link or mention (`<!channel>`). */
function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const ICONS: Record<string, string> = {
  PENDING: ':hourglass_flowing_sand:',
  PROGRESSING: ':arrow_forward:',
  PAUSED: ':double_vertical_bar:',
  SUCCEEDED: ':white_check_mark:',
  FAILED: ':x:',
  ABORTED: ':no_entry:',
  ROLLED_BACK: ':leftwards_arrow_with_hook:',
  SKIPPED: ':fast_forward:',
  CANCELLED: ':heavy_minus_sign:',
};

/** Text worth showing: present and not empty. */
function text(value: string | null | undefined): string | undefined {
  return value ? value : undefined;
}

/** One line about the event; `rolloutLink` (the UI's page of the rollout) when the server knows its public URL. */
export function slackTextOf(event: StoredEvent, rolloutLink?: string): string {
  const state = stateOf(event);
  const icon = state ? `${ICONS[state] ?? ''} ` : '';
  const rollout = event.rolloutId ? (rolloutLink ? `<${rolloutLink}|${event.rolloutId}>` : `\`${event.rolloutId}\``) : '';
  const cluster = clusterOfEvent(event);
  // A member cluster's object says which cluster it is in; `local`'s read as they always did.
  const where = cluster !== null && cluster !== LOCAL_CLUSTER ? ` in cluster \`${escapeSlack(cluster)}\`` : '';
  const object = event.name ? `\`${escapeSlack(event.namespace ? `${event.namespace}/${event.name}` : event.name)}\`${where}` : '';
  const detail = (value: string | null | undefined) => (text(value) ? `: ${escapeSlack(value!)}` : '');
  switch (event.type) {
    case EventType.RolloutStateChanged: {
      const p = readPayload(event.type, event.payload);
      return `${icon}Rollout ${rollout}${event.kind ? ` (${event.kind})` : ''} ${text(p.from) ?? 'new'} → *${state ?? '?'}*${
        p.toVersion !== undefined && p.toVersion !== '' ? ` to \`${escapeSlack(toVersionText(p.toVersion))}\`` : ''
      }${detail(p.message)}`;
    }
    case EventType.TargetStateChanged: {
      const p = readPayload(event.type, event.payload);
      return `${icon}${object} in ${rollout} ${text(p.from) ?? '?'} → *${state ?? '?'}*${detail(p.error)}`;
    }
    case EventType.TargetFailed:
      return `:x: ${object} failed in ${rollout}${detail(readPayload(event.type, event.payload).error)}`;
    default:
      return `${escapeSlack(notificationTypeOf(event))}${object ? ` ${object}` : ''}${rollout ? ` in ${rollout}` : ''}`;
  }
}

export function slackMessageOf(event: StoredEvent, options: { threadTs?: string | null; channel?: string; rolloutLink?: string }): SlackMessage {
  return {
    text: slackTextOf(event, options.rolloutLink),
    ...(options.threadTs ? { thread_ts: options.threadTs } : {}),
    ...(options.channel ? { channel: options.channel } : {}),
    unfurl_links: false,
    unfurl_media: false,
  };
}
