import { getNamedType, isEnumType, isInputObjectType, isListType, isNonNullType, isScalarType, type GraphQLArgument, type GraphQLInputType } from 'graphql';
import { CAUSE_LIMITS, MAX_IDEMPOTENCY_KEY, runUrlReason, tooLongReason } from '../domain/kinds/cause.js';
import { ValidationError } from '../errors.js';

/**
 * Size limits on every input of every root field, enforced in one place for HTTP and WebSocket alike (the root-field
 * policy calls checkInputLimits before a resolver runs). Everything a caller sends ends up in memory, in the history or
 * in the audit log, and is read back by every query that asks for it, so nothing is unbounded. The domain still
 * validates meaning (image references, selectors, ranges); this only bounds size.
 */

/** Any String or ID input not listed below. */
export const DEFAULT_MAX_STRING = 1024;
/** Any list input. */
export const MAX_LIST_ITEMS = 1000;
/** JSON inputs (specPatch): nesting and serialized size. */
export const MAX_JSON_DEPTH = 32;
export const MAX_JSON_CHARS = 65_536;

/**
 * Per-coordinate string limits: `InputType.field` for input fields, `rootField.argument` for arguments. The cause and
 * idempotency-key limits are the kind contracts' (src/domain/kinds/cause.ts), so every mutation has the same ones: an
 * `idempotencyKey` anywhere (RollbackInput, each kind's bump input) has MAX_IDEMPOTENCY_KEY (`BY_NAME`).
 */
const STRING_LIMITS: Readonly<Record<string, number>> = {
  'CauseInput.actor': CAUSE_LIMITS.actor,
  'CauseInput.runUrl': CAUSE_LIMITS.runUrl,
  'CauseInput.commit': CAUSE_LIMITS.commit,
  'CauseInput.message': CAUSE_LIMITS.message,
  'pauseRollout.reason': 500,
  'abortRollout.reason': 500,
  'approveGate.comment': 1000,
  'rejectGate.comment': 1000,
  'approveGate.gate': 80,
  'rejectGate.gate': 80,
  'retryGate.gate': 80,
  'Rollout.gate.key': 80,
  'MaintenanceWindowInput.name': 63,
  'MaintenanceWindowInput.timeZone': 64,
  'MaintenanceWindowInput.clusterSelector': 1000,
  'deleteMaintenanceWindow.name': 63,
  'AnalysisTemplateInput.name': 253,
  'deleteAnalysisTemplate.name': 253,
  'analysisTemplate.name': 253,
  'RolloutFilter.search': 200,
  'RolloutFilter.targetName': 253,
  'RolloutFilter.version': 512,
  'RolloutFilter.wave': 63,
  'EventFilter.namespace': 253,
  'EventFilter.name': 253,
  // Member cluster names are DNS-1123 labels (ADR 0048).
  'EventFilter.cluster': 63,
  'targets.cluster': 63,
  'MemberClusterSelectorInput.names': 63,
  'RolloutFilter.clusters': 63,
  'AgentRecreatedFilter.clusters': 63,
  'ClusterUpgradeFilter.clusters': 63,
  'RolloutUpdateFilter.clusters': 63,
  'NotificationSinkInput.url': 2000,
  'NotificationSinkInput.secret': 256,
  'NotificationSinkInput.token': 256,
  'NotificationSinkInput.channel': 81,
  'CreateNotificationSubscriptionInput.name': 100,
  'UpdateNotificationSubscriptionInput.name': 100,
  'NotificationFilterInput.clusters': 63,
  'NotificationFilterInput.clusterSelector': 1000,
  'NotificationFilterInput.rolloutIds': 200,
  // A kubeconfig with inline certificates is a few KB; the request body limit (ROLLPLANE_MAX_BODY_BYTES) bounds it too.
  'RegisterClusterInput.kubeconfig': 200_000,
};

/** String limits by field or argument name, wherever it is (a coordinate's own limit comes first). */
const BY_NAME: ReadonlyMap<string, number> = new Map([['idempotencyKey', MAX_IDEMPOTENCY_KEY]]);

function stringLimit(coordinate: string): number {
  return STRING_LIMITS[coordinate] ?? BY_NAME.get(coordinate.slice(coordinate.lastIndexOf('.') + 1)) ?? DEFAULT_MAX_STRING;
}

/**
 * No input may hold U+0000: PostgreSQL's text and jsonb refuse it (the write would fail as an internal error after the
 * caller's input was accepted), and no name, image, cause or key needs it.
 */
const NUL = '\u0000';
const NUL_REASON = 'must not contain the NUL character (U+0000)';

/**
 * Why `text` may not be stored, if it may not: U+0000, or a lone surrogate (a half of a UTF-16 pair, `"k\ud800"`),
 * which SQLite stored as ill-formed UTF-8 (other readers of the file then fail on the row) and PostgreSQL as U+FFFD,
 * so that two different keys collided (issue 34, attack 11, F8).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textReason(text: string): string | undefined {
  if (text.includes(NUL)) return NUL_REASON;
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it holds a lone surrogate, U+D800 to U+DFFF)';
  return undefined;
}

/** Inputs with a format besides their length. */
const FORMATS: Readonly<Record<string, (value: string) => string | undefined>> = {
  'CauseInput.runUrl': runUrlReason,
};

/** Checks a root field's arguments (as coerced by graphql-js: literals and variables alike). Throws ValidationError. */
export function checkInputLimits(fieldName: string, args: readonly GraphQLArgument[], values: Record<string, unknown>): void {
  for (const arg of args) {
    const value = values[arg.name];
    if (value !== undefined && value !== null) checkValue(value, arg.type, arg.name, `${fieldName}.${arg.name}`);
  }
}

function checkValue(value: unknown, type: GraphQLInputType, path: string, coordinate: string): void {
  if (value === null || value === undefined) return;
  if (isNonNullType(type)) {
    checkValue(value, type.ofType, path, coordinate);
    return;
  }
  if (isListType(type)) {
    if (!Array.isArray(value)) return;
    if (value.length > MAX_LIST_ITEMS) throw new ValidationError(path, `must have at most ${MAX_LIST_ITEMS} items (got ${value.length})`);
    for (const [i, item] of value.entries()) checkValue(item, type.ofType, `${path}[${i}]`, coordinate);
    return;
  }
  if (isInputObjectType(type)) {
    const fields = type.getFields();
    for (const [name, field] of Object.entries(fields)) {
      const child = (value as Record<string, unknown>)[name];
      if (child !== undefined && child !== null) checkValue(child, field.type, `${path}.${name}`, `${type.name}.${name}`);
    }
    return;
  }
  if (isEnumType(type)) return;
  const scalar = getNamedType(type);
  if (!isScalarType(scalar)) return;
  if (scalar.name === 'JSON') {
    checkJson(value, path);
    return;
  }
  if (typeof value !== 'string') return;
  const tooLong = tooLongReason(value, stringLimit(coordinate));
  if (tooLong) throw new ValidationError(path, tooLong);
  const badText = textReason(value);
  if (badText) throw new ValidationError(path, badText);
  const formatError = FORMATS[coordinate]?.(value);
  if (formatError) throw new ValidationError(path, formatError);
}

function checkJson(value: unknown, path: string): void {
  let size = 0;
  // Iterative, so that a hostile nesting depth cannot overflow the stack here either; keys are visited one at a time
  // (no Object.entries copy), so a hostile width stops at the size limit instead of being walked in full.
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  const add = (n: number) => {
    size += n;
    if (size > MAX_JSON_CHARS) throw new ValidationError(path, `must be at most ${MAX_JSON_CHARS} characters of JSON`);
  };
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (depth > MAX_JSON_DEPTH) throw new ValidationError(path, `must be nested at most ${MAX_JSON_DEPTH} levels deep`);
    if (typeof current === 'string') {
      const badText = textReason(current);
      if (badText) throw new ValidationError(path, badText);
      add(current.length + 2);
    } else if (Array.isArray(current)) {
      for (const child of current) {
        add(2);
        stack.push({ value: child, depth: depth + 1 });
      }
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) {
        const badKey = textReason(key);
        if (badKey) throw new ValidationError(path, badKey);
        add(key.length + 4);
        stack.push({ value: (current as Record<string, unknown>)[key], depth: depth + 1 });
      }
    } else add(8);
  }
}
