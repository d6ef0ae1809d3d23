import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { AppError, ConflictError, ErrorCode, NotFoundError, UnavailableError } from '../../src/errors.js';
import { isRetriable, ResourceExpiredError, translateKubeError } from '../../src/kube/errors.js';

function apiException(code: number, status: object | string): ApiException<unknown> {
  const body = typeof status === 'string' ? status : JSON.stringify(status);
  return new ApiException(code, `HTTP-Code: ${code}`, body, {});
}

describe('translateKubeError', () => {
  it('maps 404 to NotFoundError with the Status message', () => {
    const e = translateKubeError(apiException(404, { kind: 'Status', message: 'pods "x" not found', reason: 'NotFound', code: 404 }), 'get pod');
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.message).toBe('get pod: pods "x" not found');
    expect(e.details).toMatchObject({ httpStatus: 404, reason: 'NotFound' });
    expect(isRetriable(e)).toBe(false);
  });

  it('maps 409 to a retriable ConflictError', () => {
    const e = translateKubeError(apiException(409, { kind: 'Status', message: 'the object has been modified', reason: 'Conflict' }));
    expect(e).toBeInstanceOf(ConflictError);
    expect(isRetriable(e)).toBe(true);
  });

  it('maps 410 to ResourceExpiredError', () => {
    const e = translateKubeError(apiException(410, { kind: 'Status', message: 'too old resource version', reason: 'Expired' }));
    expect(e).toBeInstanceOf(ResourceExpiredError);
    expect(isRetriable(e)).toBe(true);
  });

  it.each([429, 500, 503, 504])('maps %i to a retriable UnavailableError', (code) => {
    const e = translateKubeError(apiException(code, { kind: 'Status', message: 'try later' }));
    expect(e).toBeInstanceOf(UnavailableError);
    expect(isRetriable(e)).toBe(true);
  });

  it('maps other statuses to an AppError carrying the Status message', () => {
    const e = translateKubeError(apiException(422, { kind: 'Status', message: 'spec.replicas: Invalid value' }));
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe(ErrorCode.BadUserInput);
    expect(e.message).toContain('spec.replicas: Invalid value');
    expect(translateKubeError(apiException(403, 'forbidden')).code).toBe(ErrorCode.Forbidden);
    expect(translateKubeError(apiException(418, '')).code).toBe(ErrorCode.Internal);
  });

  it('handles a body that is not JSON, watch errors and network failures', () => {
    expect(translateKubeError(apiException(500, '<html>oops</html>')).message).toContain('<html>oops</html>');
    const watchErr = Object.assign(new Error('Gone'), { statusCode: 410 });
    expect(translateKubeError(watchErr)).toBeInstanceOf(ResourceExpiredError);
    expect(translateKubeError({ kind: 'Status', code: 410, message: 'too old' })).toBeInstanceOf(ResourceExpiredError);
    expect(translateKubeError(new TypeError('fetch failed: ECONNREFUSED'))).toBeInstanceOf(UnavailableError);
  });

  it('passes AppErrors through unchanged', () => {
    const original = new NotFoundError('x');
    expect(translateKubeError(original)).toBe(original);
  });
});
