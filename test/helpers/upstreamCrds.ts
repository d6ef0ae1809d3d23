import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** ../shared/upstream from the project root (CI has shared/ beside the clone). */
export const UPSTREAM_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'upstream');

export interface UpstreamCrd {
  file: string;
  path: string;
  crd: Record<string, any>;
}

/** Every CustomResourceDefinition in the upstream reference files. */
export function upstreamCrds(): UpstreamCrd[] {
  const out: UpstreamCrd[] = [];
  for (const file of readdirSync(UPSTREAM_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    const path = join(UPSTREAM_DIR, file);
    for (const doc of parseAllDocuments(readFileSync(path, 'utf8'))) {
      const crd = doc.toJS() as Record<string, any> | null;
      if (crd?.kind === 'CustomResourceDefinition') out.push({ file, path, crd });
    }
  }
  return out;
}

/**
 * A schema reduced to its shape: what pruning, defaulting and validation act on. Descriptions and other documentation
 * are dropped; everything else (properties, types, formats, required, enums, bounds, x-kubernetes-*) is kept.
 */
export function schemaShape(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(schemaShape);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema).sort()) {
    if (key === 'description' || key === 'example' || key === 'externalDocs' || key === 'title') continue;
    const value = (schema as Record<string, unknown>)[key];
    // `properties` and `additionalProperties` hold schemas keyed by field name: recurse into each.
    out[key] = key === 'required' && Array.isArray(value) ? [...value].sort() : schemaShape(value);
  }
  return out;
}
