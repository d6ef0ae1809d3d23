import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../../src/errors.js';
import { type CheckAttempt, externalCheckStatus, interpretAnswer, parseExternalCheck } from '../../../src/domain/gates/externalCheck.js';

const opened = new Date('2026-12-05T10:00:00Z');
const secondsIn = (seconds: number) => new Date(opened.getTime() + seconds * 1000);

describe('external check answers', () => {
  it('reads 2xx as proceed, a 2xx asking retryAfterSeconds or a 429/503 with Retry-After as wait, anything else as a failure', () => {
    expect(interpretAnswer(204, undefined, '')).toEqual({ kind: 'PROCEED' });
    expect(interpretAnswer(200, undefined, '{"ok":true}')).toEqual({ kind: 'PROCEED' });
    expect(interpretAnswer(200, undefined, '{"retryAfterSeconds": 29.2}')).toEqual({ kind: 'WAIT', afterMs: 30_000 });
    expect(interpretAnswer(200, undefined, '{"retryAfterSeconds": 1e12}')).toEqual({ kind: 'WAIT', afterMs: 24 * 3_600_000 });
    expect(interpretAnswer(200, undefined, '{"retryAfterSeconds": -5}')).toEqual({ kind: 'PROCEED' });
    expect(interpretAnswer(503, '120', '')).toEqual({ kind: 'WAIT', afterMs: 120_000 });
    expect(interpretAnswer(503, 'Wed, 21 Oct 2026 07:28:00 GMT', 'busy')).toEqual({ kind: 'FAILURE', reason: 'HTTP 503: busy' });
    expect(interpretAnswer(302, undefined, '')).toEqual({ kind: 'FAILURE', reason: 'HTTP 302' });
    expect(interpretAnswer(500, undefined, 'error budget\n exhausted')).toEqual({ kind: 'FAILURE', reason: 'HTTP 500: error budget exhausted' });
  });

  it('fails after maxAttempts failures in a row; a wait or a success in between starts the count again', () => {
    const rule = parseExternalCheck({ url: 'https://checks.example.com/secret-path?token=x', maxAttempts: 2, retryInterval: '30m' }, 'gate');
    const failure = (s: number): CheckAttempt => ({ at: secondsIn(s), answer: { kind: 'FAILURE', reason: 'HTTP 500' } });
    expect(externalCheckStatus(rule, [], opened)).toMatchObject({ state: 'PENDING', nextAttemptAt: opened });
    const once = externalCheckStatus(rule, [failure(0)], opened);
    expect(once).toMatchObject({ state: 'WAITING', nextAttemptAt: secondsIn(1800) });
    expect(once.reason).not.toContain('secret-path');
    expect(externalCheckStatus(rule, [failure(0), { at: secondsIn(60), answer: { kind: 'WAIT', afterMs: 10_000 } }], opened)).toMatchObject({
      state: 'WAITING',
      nextAttemptAt: secondsIn(70),
    });
    expect(externalCheckStatus(rule, [failure(0), { at: secondsIn(60), answer: { kind: 'WAIT', afterMs: 10_000 } }, failure(70)], opened).state).toBe(
      'WAITING',
    );
    const failed = externalCheckStatus(rule, [failure(0), failure(1800)], opened);
    expect(failed).toMatchObject({ state: 'FAILED', nextAttemptAt: null });
    expect(failed.reason).toBe('checks.example.com failed 2 times in a row; last: HTTP 500');
    expect(externalCheckStatus(rule, [failure(0), { at: secondsIn(5), answer: { kind: 'PROCEED' } }], opened).state).toBe('PROCEEDED');
  });

  it.each([
    [{ url: 'not a url' }, 'gate.url'],
    [{ url: 'ftp://checks.example.com/' }, 'gate.url'],
    [{ url: 'https://user:pass@checks.example.com/' }, 'gate.url'],
    [{ url: 'https://checks.example.com/', maxAttempts: 0 }, 'gate.maxAttempts'],
    [{ url: 'https://checks.example.com/', retryInterval: '0s' }, 'gate.retryInterval'],
    [{ url: 'https://checks.example.com/', retryInterval: '90000s' }, 'gate.retryInterval'],
    [{ url: 'https://checks.example.com/', retryInterval: '1x' }, 'gate.retryInterval'],
  ])('refuses a bad check with BAD_USER_INPUT naming the field (%#)', (input, field) => {
    try {
      parseExternalCheck(input, 'gate');
      throw new Error('accepted');
    } catch (error) {
      expect((error as { code: string }).code).toBe(ErrorCode.BadUserInput);
      expect((error as { details: { field: string } }).details.field).toBe(field);
    }
  });

  it('takes a retry interval in seconds or as a window duration', () => {
    expect(parseExternalCheck({ url: 'https://checks.example.com/', retryInterval: '30s' }, 'gate').retryIntervalMs).toBe(30_000);
    expect(parseExternalCheck({ url: 'https://checks.example.com/', retryInterval: '2m' }, 'gate').retryIntervalMs).toBe(120_000);
  });
});
