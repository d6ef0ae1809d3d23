import type { StatusCause } from '../store/errors.js';
import { deepEqual } from '../store/objects.js';
import { compileRule, RuleEvalError, type CompiledRule } from './celRules.js';
import { applyDefaults } from './defaults.js';
import { dropNulls, prune } from './prune.js';
import { childSchema, isObject, pathString, schemaHas, type JsonSchemaProps, type ValidationRule } from './schema.js';
import { SchemaValidator } from './SchemaValidator.js';

interface RuleAt {
  rule: ValidationRule;
  compiled: CompiledRule;
}

/**
 * One served version of a CustomResourceDefinition, as kube-apiserver applies it to every write of a custom resource:
 * `normalize` prunes unknown fields, drops nulls the schema does not allow and applies defaults (also what a read from
 * storage does); `validate` checks the OpenAPI schema (ajv, compiled once here) and the `x-kubernetes-validations`
 * rules of the supported CEL subset (celRules.ts), plus the `apiVersion`/`kind` an embedded resource must carry.
 */
export class CustomResourceSchema {
  /** Rules outside the supported CEL subset, which are not evaluated (listed so that tests and docs can say so). */
  readonly skippedRules: string[] = [];
  private readonly validator: SchemaValidator;
  /**
   * Validators of the two halves a write through one of a status subresource's endpoints can change: `status` alone, and
   * everything but `status`. Absent when the schema has no `status` property, or when a rule at the root could read
   * both halves (then every write checks the whole object).
   */
  private readonly halves: { status: SchemaValidator; statusRoot: JsonSchemaProps; main: SchemaValidator; mainRoot: JsonSchemaProps } | undefined;
  private readonly rules = new WeakMap<JsonSchemaProps, RuleAt[]>();
  /** Schema nodes whose subtree holds a rule or an embedded resource: the only ones `walk` needs to enter. */
  private readonly checked = new WeakSet<JsonSchemaProps>();
  /** Schema nodes whose subtree holds a transition rule. */
  private readonly transitional = new WeakSet<JsonSchemaProps>();
  private readonly hasRules: boolean;
  private readonly hasDefaults: boolean;
  private readonly hasEmbedded: boolean;
  /** Root-level `x-kubernetes-preserve-unknown-fields` with no properties: nothing to prune (ClusterVersion). */
  private readonly opaque: boolean;

  constructor(readonly schema: JsonSchemaProps) {
    this.validator = new SchemaValidator(schema);
    this.hasDefaults = schemaHas(schema, (n) => n.default !== undefined);
    this.hasEmbedded = schemaHas(schema, (n) => n['x-kubernetes-embedded-resource'] === true);
    this.opaque = schema['x-kubernetes-preserve-unknown-fields'] === true && !schema.properties && !schema.additionalProperties;
    this.hasRules = schemaHas(schema, (n) => (n['x-kubernetes-validations']?.length ?? 0) > 0);
    if (this.hasRules) this.compileRules(schema);
    const needsWalk = (n: JsonSchemaProps) => (n['x-kubernetes-validations']?.length ?? 0) > 0 || n['x-kubernetes-embedded-resource'] === true;
    const mark = (n: JsonSchemaProps): void => {
      if (schemaHas(n, needsWalk)) this.checked.add(n);
      for (const sub of Object.values(n.properties ?? {})) mark(sub);
      if (typeof n.additionalProperties === 'object') mark(n.additionalProperties);
      if (n.items) mark(n.items);
    };
    mark(schema);
    const hasTransition = (n: JsonSchemaProps) => (this.rules.get(n) ?? []).some((r) => r.compiled.transition);
    const markTransitional = (n: JsonSchemaProps): void => {
      if (schemaHas(n, hasTransition)) this.transitional.add(n);
      for (const sub of Object.values(n.properties ?? {})) markTransitional(sub);
      if (typeof n.additionalProperties === 'object') markTransitional(n.additionalProperties);
      if (n.items) markTransitional(n.items);
    };
    if (this.hasRules) markTransitional(schema);
    const status = schema.properties?.status;
    if (status && !schema['x-kubernetes-validations']?.length) {
      const { status: _status, ...rest } = schema.properties!;
      const statusRoot: JsonSchemaProps = { type: 'object', properties: { status } };
      const mainRoot: JsonSchemaProps = { ...schema, properties: rest };
      if (schema.required) mainRoot.required = schema.required.filter((f) => f !== 'status');
      if (this.checked.has(status)) this.checked.add(statusRoot);
      if (schemaHas(mainRoot, needsWalk)) this.checked.add(mainRoot);
      if (this.transitional.has(status)) this.transitional.add(statusRoot);
      if (schemaHas(mainRoot, hasTransition)) this.transitional.add(mainRoot);
      this.halves = { status: new SchemaValidator(statusRoot), statusRoot, main: new SchemaValidator(mainRoot), mainRoot };
    }
  }

  /** Prunes, drops disallowed nulls and defaults `object` in place; returns the paths of the pruned fields. */
  normalize(object: Record<string, unknown>): string[] {
    if (this.opaque) return [];
    const removed = prune(object, this.schema);
    dropNulls(object, this.schema);
    if (this.hasDefaults) applyDefaults(object, this.schema);
    return removed;
  }

  /** Prunes `object` in place, nothing else: what kube-apiserver does to an object converted to this version. */
  prune(object: Record<string, unknown>): void {
    if (!this.opaque) prune(object, this.schema);
  }

  /**
   * Field errors of a normalized object; `old` (the stored object on update) feeds transition rules. `part` narrows the
   * check to what the write could change: `status` for the status subresource, `main` for the main resource of a type
   * with a status subresource (whose stored status the write cannot touch). The other half is the stored one, checked
   * when it was written.
   */
  validate(object: Record<string, unknown>, old?: Record<string, unknown>, part: 'all' | 'status' | 'main' = 'all'): StatusCause[] {
    if (part === 'all' || !this.halves) return this.check(this.validator, this.schema, object, old);
    if (part === 'status') {
      return this.check(this.halves.status, this.halves.statusRoot, { status: object.status }, old && { status: old.status });
    }
    const { status, ...main } = object;
    const { status: _oldStatus, ...oldMain } = old ?? {};
    return this.check(this.halves.main, this.halves.mainRoot, main, old && oldMain);
  }

  private check(validator: SchemaValidator, root: JsonSchemaProps, object: Record<string, unknown>, old: Record<string, unknown> | undefined): StatusCause[] {
    const causes = validator.check(object);
    if (causes.length > 0) return causes;
    if ((this.hasRules || this.hasEmbedded) && this.checked.has(root)) this.walk(object, old, old !== undefined, root, [], causes);
    return causes;
  }

  private compileRules(schema: JsonSchemaProps): void {
    const list = schema['x-kubernetes-validations'];
    if (list?.length) {
      const compiled: RuleAt[] = [];
      for (const rule of list) {
        const c = rule.messageExpression === undefined ? compileRule(rule.rule) : undefined;
        if (c) compiled.push({ rule, compiled: c });
        else this.skippedRules.push(rule.rule);
      }
      this.rules.set(schema, compiled);
    }
    for (const sub of Object.values(schema.properties ?? {})) this.compileRules(sub);
    if (typeof schema.additionalProperties === 'object') this.compileRules(schema.additionalProperties);
    if (schema.items) this.compileRules(schema.items);
  }

  private walk(value: unknown, old: unknown, hasOld: boolean, schema: JsonSchemaProps, path: (string | number)[], causes: StatusCause[]): void {
    // Validation ratcheting (kube-apiserver's CRDValidationRatcheting, on by default since 1.30): a value an update
    // leaves as it was is not failed again, so its rules need no evaluation (most updates leave most of an object
    // alone). Transition rules (those reading oldSelf) are not ratcheted: a subtree holding one is always walked.
    if (hasOld && !this.transitional.has(schema) && deepEqual(value, old)) return;
    if (schema['x-kubernetes-embedded-resource'] && isObject(value)) {
      for (const field of ['apiVersion', 'kind']) {
        if (typeof value[field] !== 'string' || value[field] === '')
          causes.push({ type: 'FieldValueRequired', field: pathString([...path, field]), message: `Required value: must not be empty` });
      }
    }
    for (const { rule, compiled } of this.rules.get(schema) ?? []) {
      if (compiled.transition && !hasOld) continue;
      const field = pathString(rule.fieldPath ? [...path, ...rule.fieldPath.replace(/^\./, '').split('.')] : path);
      try {
        if (compiled.evaluate(value, old)) continue;
        causes.push(ruleFailure(rule, field, schema));
      } catch (error) {
        if (!(error instanceof RuleEvalError)) throw error;
        causes.push({
          type: 'FieldValueInvalid',
          field,
          message: `Invalid value: ${JSON.stringify(schemaType(schema))}: ${rule.rule.trim()}: ${error.message}`,
        });
      }
    }
    // Subtrees without rules or embedded resources (an IPPool's status and metadata, say) are not entered: every write
    // of a custom resource walks here, and most of an object has nothing to check.
    if (Array.isArray(value)) {
      if (schema.items && this.checked.has(schema.items))
        for (let i = 0; i < value.length; i++) this.walk(value[i], undefined, false, schema.items, [...path, i], causes);
    } else if (isObject(value)) {
      for (const key of Object.keys(value)) {
        const sub = childSchema(schema, key);
        if (!sub || !this.checked.has(sub)) continue;
        const oldHas = hasOld && isObject(old) && old[key] !== undefined;
        this.walk(value[key], oldHas ? (old as Record<string, unknown>)[key] : undefined, oldHas, sub, [...path, key], causes);
      }
    }
  }
}

function schemaType(schema: JsonSchemaProps): string {
  return schema.type ?? (schema['x-kubernetes-int-or-string'] ? 'int-or-string' : 'object');
}

function ruleFailure(rule: ValidationRule, field: string, schema: JsonSchemaProps): StatusCause {
  const message = rule.message?.trim() || `failed rule: ${rule.rule.trim()}`;
  switch (rule.reason) {
    case 'FieldValueForbidden':
      return { type: 'FieldValueForbidden', field, message: `Forbidden: ${message}` };
    case 'FieldValueRequired':
      return { type: 'FieldValueRequired', field, message: `Required value: ${message}` };
    case 'FieldValueDuplicate':
      return { type: 'FieldValueDuplicate', field, message: `Duplicate value: ${message}` };
    default:
      return { type: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(schemaType(schema))}: ${message}` };
  }
}
