import { ValidationError } from '../errors.js';

/**
 * A Prometheus address as a template or an ALERT gate gives it: an http(s) URL of the server's root (rollplane appends
 * `/api/v1/query` or `/api/v1/alerts`). Refused (attack 19, F2, F8):
 * - a query string or fragment: a trailing `?` turned the appended API path into a query string, so the submitter chose
 *   the path asked of any service rollplane can reach;
 * - user:password: never sent (every query failed) and shown to every viewer in the gate's config and messages.
 * `{{args.…}}` placeholders stand for a value resolved per run; the check reads them as a plain word.
 */
export function checkPrometheusAddress(address: unknown, field: string, placeholder?: RegExp): string {
  if (typeof address !== 'string') throw new ValidationError(field, 'must be an http:// or https:// URL');
  const plain = placeholder ? address.replace(placeholder, 'x') : address;
  let url: URL;
  try {
    url = new URL(plain);
  } catch {
    throw new ValidationError(field, 'must be an http:// or https:// URL');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || /\s/.test(plain)) throw new ValidationError(field, 'must be an http:// or https:// URL');
  if (url.username || url.password) {
    throw new ValidationError(field, 'must not carry a user or password: rollplane would not send them, and every viewer would read them');
  }
  if (url.search || url.hash || plain.includes('?') || plain.includes('#')) {
    throw new ValidationError(field, "must be the server's address with no query string or fragment (rollplane appends /api/v1/…)");
  }
  return address;
}
