/**
 * When a failed delivery is tried again, and when it is given up (dead-lettered): exponential backoff with jitter, a
 * bounded number of attempts, and no retry of an answer that says the request itself is wrong.
 */
export interface RetryPolicy {
  /** Attempts before a delivery is dead-lettered (the first attempt counts). */
  maxAttempts: number;
  /** The wait after the first failed attempt; each next one doubles it, up to maxMs. */
  baseMs: number;
  maxMs: number;
}

/**
 * The wait after the `failures`-th failed attempt: half the exponential step plus a random part of the other half
 * ("equal jitter"), so the replicas' and subscriptions' retries spread out instead of arriving together, and the wait
 * never drops below half the step.
 */
export function backoffMs(failures: number, policy: Pick<RetryPolicy, 'baseMs' | 'maxMs'>, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(step / 2 + random() * (step / 2));
}

export type Verdict = 'delivered' | 'retry' | 'permanent';

/**
 * 2xx delivered. 408, 425, 429 and 5xx are worth another try; any other answer (3xx: redirects are not followed, so a
 * sink cannot send rollplane elsewhere; 4xx: the request is refused as it is) is dead-lettered at once, to be replayed
 * once the receiver is fixed.
 */
export function verdictOf(statusCode: number): Verdict {
  if (statusCode >= 200 && statusCode < 300) return 'delivered';
  if (statusCode === 408 || statusCode === 425 || statusCode === 429 || statusCode >= 500) return 'retry';
  return 'permanent';
}

/** A Retry-After header (seconds, or an HTTP date) as milliseconds from `now`, within [0, maxMs]; undefined when absent or bad. */
export function retryAfterMs(header: string | undefined, now: number, maxMs: number): number | undefined {
  if (!header) return undefined;
  const seconds = /^\d{1,9}$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - now;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(maxMs, Math.max(0, seconds));
}
