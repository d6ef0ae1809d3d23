import type { SubscriptionRecord } from '../domain/notifications/model.js';
import type { DueDelivery } from '../domain/notifications/NotificationStore.js';
import { CLOUDEVENTS_CONTENT_TYPE, cloudEventOf, slackMessageOf } from '../domain/notifications/render.js';
import { SIGNATURE_HEADER, signatureHeader } from '../domain/notifications/signature.js';
import { postOnce, type SinkAgents, sinkAgents } from './httpSend.js';
import type { TargetGuard } from './targetGuard.js';

export interface SinkOptions {
  guard: TargetGuard;
  /** The longest one attempt may take (ROLLPLANE_NOTIFY_TIMEOUT_MS). */
  timeoutMs: number;
  /** CloudEvents `source` of every event (ROLLPLANE_PUBLIC_URL, or `urn:rollplane`). */
  source: string;
  /** The UI's base URL for links in Slack messages, when the server knows its public URL. */
  uiUrl?: string;
  /** `rollplane/<version>`. */
  userAgent: string;
  /** This replica (the leader's identity), sent so that a receiver can tell who sent a duplicate. */
  replica: string;
  now?: () => number;
}

/** What a sink answered to one attempt. */
export interface SinkAnswer {
  statusCode: number;
  retryAfter?: string;
  /** Why a 2xx answer is still a failure (Slack's `{"ok": false, "error": …}`), or the body's start on a failure. */
  problem?: string;
  /** SLACK: the `ts` of the message just posted, when the answer has one (chat.postMessage; incoming webhooks say "ok"). */
  threadTs?: string;
}

/** A body's start as one line, for lastError (never more than this of what a sink said is kept). */
export function bodyPrefix(body: string, max = 120): string {
  return body.replace(/\s+/g, ' ').trim().slice(0, max);
}

/**
 * Sends one delivery to its subscription's sink: the webhook as a signed CloudEvent, Slack as a message in its
 * rollout's thread when there is one. Both are rendered from the delivery's committed event (read with it).
 */
export class Sinks {
  private readonly agents: SinkAgents = sinkAgents();

  constructor(private readonly options: SinkOptions) {}

  /** Closes the connections kept open to sinks. */
  close(): void {
    this.agents.destroy();
  }

  async send(subscription: SubscriptionRecord, delivery: DueDelivery, signal: AbortSignal): Promise<SinkAnswer> {
    const url = this.options.guard.checkForSending(subscription.url);
    const common = {
      'user-agent': this.options.userAgent,
      'x-rollplane-delivery': String(delivery.id),
      'x-rollplane-attempt': String(delivery.attempts + 1),
      'x-rollplane-replica': this.options.replica,
    };
    const limits = { timeoutMs: this.options.timeoutMs, signal, agents: this.agents };
    if (subscription.sinkKind === 'WEBHOOK') {
      const body = JSON.stringify(cloudEventOf(delivery.event, this.options.source));
      const timestamp = Math.floor((this.options.now ?? Date.now)() / 1000);
      const answer = await postOnce(
        this.options.guard,
        url,
        {
          ...common,
          'content-type': CLOUDEVENTS_CONTENT_TYPE,
          'idempotency-key': String(delivery.eventId),
          [SIGNATURE_HEADER]: signatureHeader(subscription.secret, timestamp, body),
        },
        body,
        limits,
      );
      return {
        statusCode: answer.statusCode,
        ...retryAfterOf(answer.headers['retry-after']),
        ...(isSuccess(answer.statusCode) ? {} : { problem: bodyPrefix(answer.body) }),
      };
    }
    const rolloutLink =
      this.options.uiUrl && delivery.event.rolloutId ? `${this.options.uiUrl}/#/rollouts/${encodeURIComponent(delivery.event.rolloutId)}` : undefined;
    const body = JSON.stringify(
      slackMessageOf(delivery.event, {
        threadTs: delivery.threadTs,
        ...(subscription.channel ? { channel: subscription.channel } : {}),
        ...(rolloutLink ? { rolloutLink } : {}),
      }),
    );
    const answer = await postOnce(
      this.options.guard,
      url,
      { ...common, 'content-type': 'application/json; charset=utf-8', ...(subscription.secret ? { authorization: `Bearer ${subscription.secret}` } : {}) },
      body,
      limits,
    );
    const slack = slackAnswerOf(answer.body);
    if (isSuccess(answer.statusCode) && slack?.ok === false) {
      return { statusCode: answer.statusCode, problem: `Slack: ${bodyPrefix(String(slack.error ?? 'not ok'), 80)}` };
    }
    return {
      statusCode: answer.statusCode,
      ...retryAfterOf(answer.headers['retry-after']),
      ...(isSuccess(answer.statusCode) ? {} : { problem: bodyPrefix(answer.body) }),
      ...(isSuccess(answer.statusCode) && typeof slack?.ts === 'string' && slack.ts !== '' ? { threadTs: slack.ts } : {}),
    };
  }
}

function isSuccess(statusCode: number): boolean {
  return statusCode >= 200 && statusCode < 300;
}

function retryAfterOf(header: string | string[] | undefined): { retryAfter?: string } {
  return typeof header === 'string' ? { retryAfter: header } : {};
}

/** Slack's Web API answers JSON (`ok`, `ts`, `error`); an incoming webhook answers the text "ok". */
function slackAnswerOf(body: string): { ok?: unknown; ts?: unknown; error?: unknown } | undefined {
  if (!body.startsWith('{')) return undefined;
  try {
    return JSON.parse(body) as { ok?: unknown; ts?: unknown; error?: unknown };
  } catch {
    return undefined;
  }
}
