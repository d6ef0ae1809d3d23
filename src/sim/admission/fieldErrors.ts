/**
 * Field errors as apimachinery's `field.Error` renders them, so that a 422 from the simulator reads exactly like one from
 * kube-apiserver: the cause `type` (FieldValueInvalid, ...), the `field` path, and the message body
 * (`Invalid value: "x": detail`, `Required value`, `Forbidden: detail`, `Too long: may not be more than N bytes`).
 */
import type { StatusCause } from '../store/errors.js';

export type FieldError = Required<Pick<StatusCause, 'type' | 'field' | 'message'>>;

/** Go's rendering of a bad value: %q for strings, %v for numbers and booleans, JSON for the rest. */
function renderValue(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function withDetail(body: string, detail: string): string {
  return detail ? `${body}: ${detail}` : body;
}

export function invalidField(field: string, value: unknown, detail: string): FieldError {
  return { type: 'FieldValueInvalid', field, message: withDetail(`Invalid value: ${renderValue(value)}`, detail) };
}

export function requiredField(field: string, detail = ''): FieldError {
  return { type: 'FieldValueRequired', field, message: withDetail('Required value', detail) };
}

export function forbiddenField(field: string, detail: string): FieldError {
  return { type: 'FieldValueForbidden', field, message: withDetail('Forbidden', detail) };
}

export function tooLongField(field: string, maxBytes: number): FieldError {
  return { type: 'FieldValueTooLong', field, message: `Too long: may not be more than ${maxBytes} ${maxBytes === 1 ? 'byte' : 'bytes'}` };
}
