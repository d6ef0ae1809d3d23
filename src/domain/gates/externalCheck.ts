import { ValidationError } from '../../errors.js';
import { parseDuration } from './maintenanceWindows.js';

/**
 * External check gates (issue 30, as Flagger's webhooks and Cluster API's runtime hooks): rollplane POSTs the run's
 * context, signed as its notifications are, to a URL. A 2xx answer proceeds; a 2xx answer with
 * `{"retryAfterSeconds": n}` — or a 429/503 with a `Retry-After` of seconds — asks to wait and try again (not a
 * failure); anything else (another status, no answer, a timeout, a redirect) is a failure, and the gate fails after
 * `maxAttempts` failures in a row. The state is computed from the kept attempts, so a restart or a new leader goes on
 * where the last attempt left off.
 */
export interface ExternalCheckInput {
  url: string;
  /** Failures in a row before the gate fails; default 3, at most 20. */
  maxAttempts?: number | null;
  /** Between a failure and the next attempt; default `1m`. */
  retryInterval?: string | null;
}

export interface ExternalCheckRule {
  readonly url: string;
  readonly maxAttempts: number;
  readonly retryIntervalMs: number;
}

export type CheckAnswer = { kind: 'PROCEED' } | { kind: 'WAIT'; afterMs: number } | { kind: 'FAILURE'; reason: string };

export interface CheckAttempt {
  at: Date;
  answer: CheckAnswer;
}

export interface ExternalCheckStatus {
  state: 'PENDING' | 'WAITING' | 'PROCEEDED' | 'FAILED';
  /** When the next attempt is due (null once decided). */
  nextAttemptAt: Date | null;
  reason: string;
}

const MAX_ATTEMPTS = 20;
/** The longest wait an answer may ask for; longer asks are capped (the gate's own deadline still applies). */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export function parseExternalCheck(input: ExternalCheckInput, field: string): ExternalCheckRule {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new ValidationError(`${field}.url`, 'must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError(`${field}.url`, 'must be an absolute http:// or https:// URL');
  if (url.username || url.password) throw new ValidationError(`${field}.url`, 'must not carry credentials (the request is signed instead)');
  const maxAttempts = input.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS) {
    throw new ValidationError(`${field}.maxAttempts`, `must be a whole number from 1 to ${MAX_ATTEMPTS}`);
  }
  const retryIntervalMs = input.retryInterval ? retryInterval(input.retryInterval, `${field}.retryInterval`) : 60_000;
  return { url: url.toString(), maxAttempts, retryIntervalMs };
}

/** Seconds (`30s`, 1 to 86400) or a duration of minutes and more (`5m`, `1h`, as windows take them). */
function retryInterval(text: string, field: string): number {
  const seconds = /^(\d{1,5})s$/.exec(text);
  if (!seconds) return parseDuration(text, field);
  const n = Number(seconds[1]);
  if (n < 1 || n > 86_400) throw new ValidationError(field, `"${text}" is not between 1s and 86400s`);
  return n * 1000;
}

/** What one HTTP answer means (status, the `Retry-After` header, the start of the body). */
export function interpretAnswer(statusCode: number, retryAfter: string | undefined, body: string): CheckAnswer {
  if (statusCode >= 200 && statusCode < 300) {
    const asked = retryAfterIn(body);
    return asked === undefined ? { kind: 'PROCEED' } : { kind: 'WAIT', afterMs: asked };
  }
  if ((statusCode === 429 || statusCode === 503) && retryAfter && /^\d{1,6}$/.test(retryAfter.trim())) {
    return { kind: 'WAIT', afterMs: Math.min(Number(retryAfter.trim()) * 1000, MAX_RETRY_AFTER_MS) };
  }
  const said = body.replace(/\s+/g, ' ').trim().slice(0, 120);
  return { kind: 'FAILURE', reason: `HTTP ${statusCode}${said ? `: ${said}` : ''}` };
}

function retryAfterIn(body: string): number | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const seconds = (parsed as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return undefined;
  return Math.min(Math.ceil(seconds) * 1000, MAX_RETRY_AFTER_MS);
}

/** The gate's state from its attempts (oldest first). */
export function externalCheckStatus(rule: ExternalCheckRule, attempts: readonly CheckAttempt[], openedAt: Date): ExternalCheckStatus {
  const last = attempts[attempts.length - 1];
  if (!last) return { state: 'PENDING', nextAttemptAt: openedAt, reason: `checking ${hostOf(rule.url)}` };
  if (last.answer.kind === 'PROCEED') return { state: 'PROCEEDED', nextAttemptAt: null, reason: `${hostOf(rule.url)} answered proceed` };
  if (last.answer.kind === 'WAIT') {
    const next = new Date(last.at.getTime() + last.answer.afterMs);
    return { state: 'WAITING', nextAttemptAt: next, reason: `${hostOf(rule.url)} asked to wait until ${next.toISOString()}` };
  }
  let failures = 0;
  for (let i = attempts.length - 1; i >= 0 && attempts[i]!.answer.kind === 'FAILURE'; i--) failures++;
  if (failures >= rule.maxAttempts) {
    return {
      state: 'FAILED',
      nextAttemptAt: null,
      reason: `${hostOf(rule.url)} failed ${failures} time${failures === 1 ? '' : 's'} in a row; last: ${last.answer.reason}`,
    };
  }
  const next = new Date(last.at.getTime() + rule.retryIntervalMs);
  return {
    state: 'WAITING',
    nextAttemptAt: next,
    reason: `${hostOf(rule.url)} failed (${last.answer.reason}); attempt ${failures + 1} of ${rule.maxAttempts} at ${next.toISOString()}`,
  };
}

/** The URL's host only: a path or query may carry a secret (as Slack's webhook URLs do). */
function hostOf(url: string): string {
  return new URL(url).host;
}
