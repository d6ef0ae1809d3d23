import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (docs/notifications.md, "Verifying a delivery"): `X-Rollplane-Signature: t=<unix seconds>,v1=<hex>`
 * where the hex is HMAC-SHA256 with the subscription's secret over `<t>.<body>`, the body as sent. The time is signed
 * with the body, so a receiver that refuses times outside its replay window (five minutes is the advice) cannot be
 * made to accept an old request again; each attempt is signed anew.
 */
export const SIGNATURE_HEADER = 'x-rollplane-signature';
export const REPLAY_WINDOW_SECONDS = 300;

function digest(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${digest(secret, timestamp, body)}`;
}

/** What a receiver does: true when the header signs `body` with `secret` at a time within the window around `now`. */
export function verifySignature(secret: string, header: string | undefined, body: string, nowSeconds: number, windowSeconds = REPLAY_WINDOW_SECONDS): boolean {
  if (!header) return false;
  const parts = new Map(header.split(',').map((part) => part.split('=', 2) as [string, string]));
  const timestamp = Number(parts.get('t'));
  const given = parts.get('v1');
  if (!Number.isSafeInteger(timestamp) || !given || !/^[0-9a-f]{64}$/.test(given)) return false;
  if (Math.abs(nowSeconds - timestamp) > windowSeconds) return false;
  return timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(digest(secret, timestamp, body), 'hex'));
}
