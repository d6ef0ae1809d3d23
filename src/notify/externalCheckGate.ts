import { type CheckAttempt, externalCheckStatus, type ExternalCheckInput, parseExternalCheck } from '../domain/gates/externalCheck.js';
import type { GateLooks, LookAnswer } from '../domain/gates/looks.js';
import type { GateFacts, GateType } from '../domain/gates/registry.js';
import { ValidationError } from '../errors.js';
import { sendCheck } from './externalCheck.js';
import type { TargetGuard } from './targetGuard.js';

/**
 * The EXTERNAL_CHECK gate (issue 30: "an external check answers proceed, retry-after, or fail"; ADR 0068). Its config
 * is `{url, maxAttempts?, retryInterval?, secret}`, where `secret` NAMES one of the signing secrets the operator gave
 * rollplane (ROLLPLANE_EXTERNAL_CHECK_SECRETS_FILE): the secret itself is never in the gate's config, so the API that
 * shows configs, the audit log and the history never hold it. Each attempt POSTs the run's context signed with it
 * (src/notify/externalCheck.ts: the notifications' SSRF guard and bounds) in the background (GateLooks), and is kept
 * with its answer; the gate's state is computed from the kept attempts (src/domain/gates/externalCheck.ts).
 */

const FIELDS = ['url', 'maxAttempts', 'retryInterval', 'secret'];

export interface ExternalCheckGateDeps {
  looks: GateLooks;
  guard: TargetGuard;
  /** Signing secrets by name, as the operator configured them. */
  secrets: ReadonlyMap<string, string>;
  timeoutMs: number;
  userAgent: string;
}

function ruleOf(config: Record<string, unknown>, field: string) {
  return parseExternalCheck(config as unknown as ExternalCheckInput, field);
}

function attemptsOf(facts: GateFacts): CheckAttempt[] {
  return facts.attempts.map((a) => ({
    at: a.at,
    answer:
      a.answer === 'PROCEED' ? { kind: 'PROCEED' } : a.answer === 'WAIT' ? { kind: 'WAIT', afterMs: a.afterMs ?? 0 } : { kind: 'FAILURE', reason: a.reason },
  }));
}

/** What the check is POSTed: the run's context (no secret, no token). */
export function checkContext(facts: GateFacts): Record<string, unknown> {
  const { gate } = facts;
  return {
    rolloutId: gate.rolloutId,
    gate: gate.key,
    wave: gate.wave.name,
    clusters: [...gate.wave.clusters],
    version: gate.version,
    baselineVersion: gate.baselineVersion,
    attempt: facts.attempts.length + 1,
  };
}

export function externalCheckGateType(deps: ExternalCheckGateDeps): GateType {
  return {
    takesDecisions: false,
    check(config, field) {
      if (!config || typeof config !== 'object' || Array.isArray(config)) throw new ValidationError(field, 'must be a JSON object');
      const c = config as Record<string, unknown>;
      const unknown = Object.keys(c).find((k) => !FIELDS.includes(k));
      if (unknown !== undefined) throw new ValidationError(`${field}.${unknown.slice(0, 40)}`, `is not a field of this gate (known: ${FIELDS.join(', ')})`);
      if (typeof c.url !== 'string') throw new ValidationError(`${field}.url`, 'must be an absolute http:// or https:// URL');
      ruleOf(c, field);
      if (typeof c.secret !== 'string' || !deps.secrets.has(c.secret)) {
        const known = [...deps.secrets.keys()];
        throw new ValidationError(
          `${field}.secret`,
          `must name a signing secret rollplane was given (ROLLPLANE_EXTERNAL_CHECK_SECRETS_FILE; ${known.length > 0 ? `names: ${known.join(', ')}` : 'none configured'}); the secret itself never goes in a gate's config`,
        );
      }
      return c;
    },
    progress(config, facts) {
      const status = externalCheckStatus(ruleOf(config, 'config'), attemptsOf(facts), facts.openedAt);
      switch (status.state) {
        case 'PROCEEDED':
          return { state: 'PASSED', reason: status.reason };
        case 'FAILED':
          return { state: 'FAILED', reason: status.reason };
        default:
          // An attempt under way wakes the rollout when answered; if that is lost, the engine looks again after its timeout.
          return {
            state: 'WAITING',
            reason: status.reason,
            until: status.nextAttemptAt && status.nextAttemptAt > facts.now ? status.nextAttemptAt : new Date(facts.now.getTime() + deps.timeoutMs + 1000),
          };
      }
    },
    async open(config, facts) {
      const rule = ruleOf(config, 'config');
      const status = externalCheckStatus(rule, attemptsOf(facts), facts.openedAt);
      if (!status.nextAttemptAt) return;
      const secret = deps.secrets.get(String(config.secret));
      if (secret === undefined) return; // the operator removed it: the gate waits, its reason unchanged
      const context = checkContext(facts);
      deps.looks.start(facts.gate, facts.attempts.length, status.nextAttemptAt, deps.timeoutMs + 1000, async (signal): Promise<LookAnswer> => {
        const answer = await sendCheck(deps.guard, { url: rule.url, secret }, context, { timeoutMs: deps.timeoutMs, signal, userAgent: deps.userAgent });
        if (answer.kind === 'PROCEED') return { answer: 'PROCEED', afterMs: null, reason: 'answered proceed' };
        if (answer.kind === 'WAIT') return { answer: 'WAIT', afterMs: answer.afterMs, reason: `asked to wait ${Math.round(answer.afterMs / 1000)}s` };
        return { answer: 'FAILURE', afterMs: null, reason: answer.reason };
      });
    },
  };
}
