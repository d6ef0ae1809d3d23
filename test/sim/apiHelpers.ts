import { ApiException } from '@kubernetes/client-node';
import { expect } from 'vitest';

/** Awaits a client-node call that must fail and checks the HTTP code and the Status reason. */
export async function expectStatus(call: Promise<unknown>, code: number, reason: string): Promise<Record<string, any>> {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiException);
    const e = error as ApiException<unknown>;
    expect(e.code).toBe(code);
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    expect(body.kind).toBe('Status');
    expect(body.reason).toBe(reason);
    expect(body.code).toBe(code);
    return body as Record<string, any>;
  }
  throw new Error(`expected the call to fail with ${code} ${reason}, but it succeeded`);
}
