import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import addFormatsPlugin from 'ajv-formats';
import type { StatusCause } from '../store/errors.js';
import { childSchema, isObject, pathString, type JsonSchemaProps } from './schema.js';

/**
 * The OpenAPI part of a CRD version's schema, compiled once with ajv: `type`, `required`, `enum`, `pattern`, `format`,
 * `minimum`/`maximum` (and their exclusive forms), `minLength`/`maxLength`, `minItems`/`maxItems`,
 * `minProperties`/`maxProperties`, `multipleOf`, `nullable`, `additionalProperties`, `allOf`/`anyOf`/`oneOf`/`not`,
 * and `x-kubernetes-int-or-string`. Errors come back as Kubernetes field errors (`StatusCause`s) with the reason types
 * and message bodies kube-apiserver uses.
 */

// ajv-formats is CommonJS: under NodeNext its default import is the plugin function itself.
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv, formats: string[]) => Ajv;

/** The string formats kube-apiserver checks that ajv-formats also knows; other formats are ignored, as upstream. */
const AJV_FORMATS = ['ipv4', 'ipv6', 'uuid', 'email', 'hostname', 'uri', 'date', 'date-time', 'byte', 'password'];

let shared: Ajv | undefined;

function ajv(): Ajv {
  if (shared) return shared;
  shared = new Ajv({ allErrors: true, strict: false, logger: false, validateSchema: false, code: { regExp: goRegExp } });
  addFormats(shared, AJV_FORMATS);
  shared.addFormat('cidr', { type: 'string', validate: isCidr });
  shared.addFormat('mac', { type: 'string', validate: (s: string) => /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/.test(s) });
  shared.addFormat('int-or-string', true);
  for (const format of ['int32', 'int64', 'float', 'double', 'duration', 'datetime', 'quantity']) shared.addFormat(format, true);
  return shared;
}

/**
 * CRD patterns are Go (RE2) regular expressions: a leading flag group such as `(?i)` becomes a JavaScript flag, and a
 * pattern JavaScript cannot compile at all is not checked (rather than refusing a CRD a real API server accepts).
 */
function goRegExpEngine(pattern: string, flags: string): { test(text: string): boolean } {
  let source = pattern;
  let all = flags;
  const group = /^\(\?([ims]+)\)/.exec(source);
  if (group) {
    source = source.slice(group[0].length);
    for (const flag of group[1]!) if (!all.includes(flag)) all += flag;
  }
  try {
    return new RegExp(source, all);
  } catch {
    return { test: () => true };
  }
}
const goRegExp = Object.assign(goRegExpEngine, { code: 'goRegExp' }) as unknown as RegExpEngine;

function isCidr(text: string): boolean {
  const [ip, bits, extra] = text.split('/');
  if (extra !== undefined || ip === undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  if (/^(\d{1,3})(\.\d{1,3}){3}$/.test(ip)) return ip.split('.').every((o) => Number(o) <= 255 && !/^0\d/.test(o)) && Number(bits) <= 32;
  return ip.includes(':') && Number(bits) <= 128;
}

/** The same schema with what ajv does not know translated (exclusive bounds, int-or-string) and extensions dropped. */
function toAjvSchema(schema: JsonSchemaProps): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-') || key === 'default' || key === 'description' || key === 'example' || key === 'externalDocs') continue;
    switch (key) {
      case 'properties':
        out.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchemaProps>).map(([k, v]) => [k, toAjvSchema(v)]));
        break;
      case 'items':
      case 'not':
        out[key] = toAjvSchema(value as JsonSchemaProps);
        break;
      case 'additionalProperties':
        out[key] = typeof value === 'object' ? toAjvSchema(value as JsonSchemaProps) : value;
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        out[key] = (value as JsonSchemaProps[]).map(toAjvSchema);
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        break;
      default:
        out[key] = value;
    }
  }
  if (schema.exclusiveMinimum === true && schema.minimum !== undefined) {
    out.exclusiveMinimum = schema.minimum;
    delete out.minimum;
  }
  if (schema.exclusiveMaximum === true && schema.maximum !== undefined) {
    out.exclusiveMaximum = schema.maximum;
    delete out.maximum;
  }
  if (schema['x-kubernetes-int-or-string'] && !schema.type && !schema.anyOf) out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  return out;
}

export class SchemaValidator {
  private readonly validate: ValidateFunction;

  constructor(private readonly schema: JsonSchemaProps) {
    this.validate = ajv().compile(toAjvSchema(schema));
  }

  /** Field errors of `object` against the schema; empty when it is valid. */
  check(object: unknown): StatusCause[] {
    if (this.validate(object)) return [];
    const causes: StatusCause[] = [];
    const seen = new Set<string>();
    for (const error of this.validate.errors ?? []) {
      const cause = this.toCause(object, error);
      if (!cause) continue;
      const key = `${cause.field}\u0000${cause.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      causes.push(cause);
    }
    return causes;
  }

  private toCause(object: unknown, error: ErrorObject): StatusCause | undefined {
    const segments =
      error.instancePath === ''
        ? []
        : error.instancePath
            .slice(1)
            .split('/')
            .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const { parts, value, schema } = resolve(object, this.schema, segments);
    const field = pathString(parts);
    const at = (detail: string) => `${field} in body ${detail}`;
    const p = error.params as Record<string, any>;
    // int-or-string: the two branch errors collapse into one type error on the anyOf.
    if (error.schemaPath.includes('/anyOf/') && schema?.['x-kubernetes-int-or-string']) return undefined;
    switch (error.keyword) {
      case 'required': {
        const missing = pathString([...parts, p.missingProperty as string]);
        return { type: 'FieldValueRequired', field: missing, message: 'Required value' };
      }
      case 'type':
        return typeInvalid(field, value, at(`must be of type ${typeName(p.type)}: ${quote(jsonType(value))}`));
      case 'anyOf':
        if (schema?.['x-kubernetes-int-or-string']) return typeInvalid(field, value, at(`must be of type integer,string: ${quote(jsonType(value))}`));
        return invalidValue(field, value, at('must validate at least one schema (anyOf)'));
      case 'oneOf':
        return invalidValue(field, value, at('must validate one and only one schema (oneOf)'));
      case 'not':
        return invalidValue(field, value, at('must not validate the schema (not)'));
      case 'enum':
        return {
          type: 'FieldValueNotSupported',
          field,
          message: `Unsupported value: ${display(value)}: supported values: ${(p.allowedValues as unknown[]).map((v) => display(v)).join(', ')}`,
        };
      case 'pattern':
        return invalidValue(field, value, at(`should match '${p.pattern}'`));
      case 'format':
        return invalidValue(field, value, at(`must be of type ${p.format}: ${quote(String(value))}`));
      case 'maximum':
        return invalidValue(field, value, at(`should be less than or equal to ${p.limit}`));
      case 'exclusiveMaximum':
        return invalidValue(field, value, at(`should be less than ${p.limit}`));
      case 'minimum':
        return invalidValue(field, value, at(`should be greater than or equal to ${p.limit}`));
      case 'exclusiveMinimum':
        return invalidValue(field, value, at(`should be greater than ${p.limit}`));
      case 'maxLength':
        return { type: 'FieldValueTooLong', field, message: `Too long: may not be longer than ${p.limit}` };
      case 'minLength':
        return invalidValue(field, value, at(`should be at least ${p.limit} chars long`));
      case 'maxItems':
        return { type: 'FieldValueTooMany', field, message: `Too many: ${(value as unknown[]).length}: must have at most ${p.limit} items` };
      case 'minItems':
        return invalidValue(field, value, at(`should have at least ${p.limit} items`));
      case 'maxProperties':
        return { type: 'FieldValueTooMany', field, message: `Too many: ${Object.keys(value as object).length}: must have at most ${p.limit} items` };
      case 'minProperties':
        return invalidValue(field, value, at(`should have at least ${p.limit} properties`));
      case 'multipleOf':
        return invalidValue(field, value, at(`should be a multiple of ${p.multipleOf}`));
      case 'uniqueItems':
        return {
          type: 'FieldValueDuplicate',
          field: pathString([...parts, p.j as number]),
          message: `Duplicate value: ${display((value as unknown[])[p.j as number])}`,
        };
      case 'additionalProperties':
        return invalidValue(field, value, at(`must not have additional properties`));
      default:
        return invalidValue(field, value, at(error.message ?? 'is invalid'));
    }
  }
}

/** Walks the instance path through the object and the schema: path parts (numbers for list indexes), value, schema. */
function resolve(
  object: unknown,
  schema: JsonSchemaProps | undefined,
  segments: string[],
): { parts: (string | number)[]; value: unknown; schema: JsonSchemaProps | undefined } {
  const parts: (string | number)[] = [];
  let value = object;
  let node = schema;
  for (const segment of segments) {
    if (Array.isArray(value)) {
      const index = Number(segment);
      parts.push(index);
      value = value[index];
      node = node?.items;
    } else {
      parts.push(segment);
      value = isObject(value) ? value[segment] : undefined;
      node = node ? childSchema(node, segment) : undefined;
    }
  }
  return { parts, value, schema: node };
}

function typeInvalid(field: string, value: unknown, detail: string): StatusCause {
  return { type: 'FieldValueTypeInvalid', field, message: `Invalid value: ${quote(jsonType(value))}: ${detail}` };
}

function invalidValue(field: string, value: unknown, detail: string): StatusCause {
  return { type: 'FieldValueInvalid', field, message: `Invalid value: ${display(value)}: ${detail}` };
}

function typeName(type: unknown): string {
  return Array.isArray(type) ? type.join(',') : String(type);
}

/** The OpenAPI type name of a JSON value, as kube-apiserver reports the type it found. */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function quote(text: string): string {
  return JSON.stringify(text);
}

/** A value as Go's field errors print it: strings quoted, numbers and booleans bare, the rest as JSON. */
export function display(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || value === undefined) return '"null"';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
