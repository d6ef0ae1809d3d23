import { childSchema, isObject, type JsonSchemaProps } from './schema.js';

/**
 * Structural defaulting, in place, as kube-apiserver applies `default` on every write and on every read from storage:
 * top-down, a missing property (or a null one that is not `nullable`) gets a copy of its default, and defaulting then
 * continues inside the value, so defaults nested in a defaulted object apply too. Lists and maps are walked with
 * their item and value schemas.
 */
export function applyDefaults(value: unknown, schema: JsonSchemaProps | undefined): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) applyDefaults(item, schema.items);
    return;
  }
  if (!isObject(value)) return;
  if (schema.properties) {
    for (const [key, property] of Object.entries(schema.properties)) {
      if (property.default === undefined) continue;
      const current = value[key];
      if (current === undefined || (current === null && !property.nullable)) value[key] = structuredClone(property.default);
    }
  }
  for (const key of Object.keys(value)) applyDefaults(value[key], childSchema(schema, key));
}
