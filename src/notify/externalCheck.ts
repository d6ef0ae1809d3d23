import { type CheckAnswer, interpretAnswer } from '../domain/gates/externalCheck.js';
import { SIGNATURE_HEADER, signatureHeader } from '../domain/notifications/signature.js';
import { postOnce, type SinkAgents } from './httpSend.js';
import type { TargetGuard } from './targetGuard.js';

/**
 * One attempt of an external check gate (src/domain/gates/externalCheck.ts): the run's context as JSON, signed with
 * the gate's secret as webhook deliveries are (`X-Rollplane-Signature`), through the same guard (no private networks
 * unless allowed, no redirects) and bounds (timeout, answer size) as notifications. Never throws: every way it can go
 * wrong is a FAILURE answer with a short reason that never contains the URL.
 */
export async function sendCheck(
  guard: TargetGuard,
  check: { url: string; secret: string },
  context: Record<string, unknown>,
  options: { timeoutMs: number; signal: AbortSignal; userAgent: string; agents?: SinkAgents; now?: () => number },
): Promise<CheckAnswer> {
  const body = JSON.stringify(context);
  const timestamp = Math.floor((options.now ?? Date.now)() / 1000);
  try {
    const url = guard.checkForSending(check.url);
    const answer = await postOnce(
      guard,
      url,
      { 'content-type': 'application/json', 'user-agent': options.userAgent, [SIGNATURE_HEADER]: signatureHeader(check.secret, timestamp, body) },
      body,
      { timeoutMs: options.timeoutMs, signal: options.signal, ...(options.agents ? { agents: options.agents } : {}) },
    );
    const retryAfter = answer.headers['retry-after'];
    return interpretAnswer(answer.statusCode, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, answer.body);
  } catch (error) {
    return { kind: 'FAILURE', reason: error instanceof Error ? error.message.slice(0, 200) : 'the check could not be sent' };
  }
}
