/**
 * The OpenAPI v3 schema of a CustomResourceDefinition version (`JSONSchemaProps` in apiextensions.k8s.io/v1), and
 * small helpers over it shared by pruning, defaulting, validation and the x-kubernetes-validations rules.
 */
export interface JsonSchemaProps {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, JsonSchemaProps>;
  additionalProperties?: JsonSchemaProps | boolean;
  items?: JsonSchemaProps;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  multipleOf?: number;
  uniqueItems?: boolean;
  allOf?: JsonSchemaProps[];
  anyOf?: JsonSchemaProps[];
  oneOf?: JsonSchemaProps[];
  not?: JsonSchemaProps;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: ValidationRule[];
  [extension: string]: unknown;
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/** The schema that applies to the values of an object node: a property's, or additionalProperties' for maps. */
export function childSchema(schema: JsonSchemaProps, key: string): JsonSchemaProps | undefined {
  const property = schema.properties?.[key];
  if (property) return property;
  const additional = schema.additionalProperties;
  return typeof additional === 'object' ? additional : undefined;
}

/** True when unknown keys of an object node are kept (not pruned). */
export function keepsUnknown(schema: JsonSchemaProps): boolean {
  return schema['x-kubernetes-preserve-unknown-fields'] === true || typeof schema.additionalProperties === 'object' || schema.additionalProperties === true;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A field path as kube-apiserver prints schema errors and pruned fields: `spec.ipv4Config.dns[0]`; map keys are joined
 * with a dot like properties (`status.ipv4.allocated.10.0.0.1`), as its field.Path.Child does.
 */
export function pathString(parts: readonly (string | number)[]): string {
  let out = '';
  for (const part of parts) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

/** Does any node of the schema carry this key? (Decides once per CRD version whether a whole walk is needed.) */
export function schemaHas(schema: JsonSchemaProps, test: (node: JsonSchemaProps) => boolean): boolean {
  if (test(schema)) return true;
  for (const sub of Object.values(schema.properties ?? {})) if (schemaHas(sub, test)) return true;
  if (typeof schema.additionalProperties === 'object' && schemaHas(schema.additionalProperties, test)) return true;
  if (schema.items && schemaHas(schema.items, test)) return true;
  return false;
}
