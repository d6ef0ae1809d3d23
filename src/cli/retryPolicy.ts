/** Retry timing for the CLI's requests: capped exponential backoff with jitter, and server hints. */

export const BASE_DELAY_MS = 250;
export const MAX_DELAY_MS = 8_000;
/** A server asking for longer than this is still honoured, up to this much, so a pipeline step never hangs for hours. */
export const MAX_RETRY_AFTER_MS = 120_000;

/** Delay before retry number `attempt + 1`: 250 ms, 500 ms, 1 s, … up to 8 s, each scaled by 50–100 % (jitter). */
export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
  return Math.round(ceiling * (0.5 + random() / 2));
}

/**
 * The server's hint in milliseconds: the `Retry-After` header (seconds or an HTTP date), else the GraphQL error's
 * `extensions.retryAfterSeconds`; undefined when there is none.
 */
export function retryAfterMs(header: string | null, retryAfterSeconds: unknown, now: number = Date.now()): number | undefined {
  let ms: number | undefined;
  if (header !== null && header.trim() !== '') {
    const text = header.trim();
    if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000;
    else {
      const at = Date.parse(text);
      if (Number.isFinite(at)) ms = Math.max(0, at - now);
    }
  }
  if (ms === undefined && typeof retryAfterSeconds === 'number' && Number.isFinite(retryAfterSeconds) && retryAfterSeconds >= 0) {
    ms = retryAfterSeconds * 1000;
  }
  return ms === undefined ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.round(ms));
}
