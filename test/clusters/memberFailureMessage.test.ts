import { describe, expect, it } from 'vitest';
import { failureMessage, listFailure } from '../../src/clusters/MemberConnection.js';
import { AnswerCutOffError } from '../../src/kube/memberHttpLibrary.js';

/** How a member's failed request reads in its health and its reads' errors: a code and a cause, never an address. */
describe('a member request failure, for people', () => {
  it('a body the request timeout cut off names the timeout and its setting (attack 16, G6: a 120 MB list; attack 17, L3)', () => {
    const cut = new AnswerCutOffError({ cause: Object.assign(new Error('The user aborted a request.'), { name: 'AbortError' }) });
    expect(listFailure('ippools', cut, 10_000)).toBe(
      'ippools list: the answer was cut off by the request timeout (10000 ms, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS) before its end',
    );
  });

  it('a body the member closed before its end does not blame the timeout (attack 17, L3)', () => {
    const closed = Object.assign(new Error('Invalid response body while trying to fetch https://10.0.0.7:6443/apis/…: Premature close'), {
      code: 'ERR_STREAM_PREMATURE_CLOSE',
    });
    const text = listFailure('ippools', closed, 10_000);
    expect(text).toBe('ippools list: ERR_STREAM_PREMATURE_CLOSE: the answer was cut off before its end (the connection was closed)');
    expect(text).not.toContain('10.0.0.7');
  });

  it('an abort is "no answer within" the timeout; an HTTP status and a socket code are said as such', () => {
    expect(failureMessage(Object.assign(new Error('aborted'), { name: 'AbortError' }), 2000)).toBe('no answer within 2000 ms');
    expect(failureMessage(Object.assign(new Error('x'), { code: 503 }), 2000)).toBe('HTTP 503');
    expect(failureMessage(Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:6443'), { code: 'ECONNREFUSED' }), 2000)).toBe('ECONNREFUSED');
  });
});
