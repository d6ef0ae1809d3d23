import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

/** ../shared/upstream from the project root (CI has shared/ beside the clone). */
export const UPSTREAM_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'upstream');

/** The upstream CRDs rollplane writes to, by name: each must be in UPSTREAM_DIR. */
export const UPSTREAM_CRD_NAMES = ['clusterversions.tenancy.x-k8s.io', 'ippools.network.harvesterhci.io', 'virtualclusters.tenancy.x-k8s.io'] as const;

/**
 * Whether the tests that compare with upstream must run: under CI (`CI` set and not `false`/`0`; .ci/run exports
 * CI=true), where a missing ../shared/upstream is a broken checkout, not a developer's clone without it.
 */
export const upstreamRequired = ['true', '1'].includes((process.env.CI ?? '').toLowerCase());
export const NO_UPSTREAM = `skipped: no upstream CRDs at ${UPSTREAM_DIR} (clone rollplane beside shared/ to run them)`;

/** Whether ../shared/upstream is there. */
export function upstreamPresent(): boolean {
  return existsSync(UPSTREAM_DIR);
}

/**
 * `describe` for tests that read ../shared/upstream. Without it the block is skipped, its name saying why — unless
 * under CI, where it fails instead, so that CI never passes without comparing with upstream. `body` must read the
 * files only inside its tests and hooks (never while the tests are collected).
 */
export function describeWithUpstream(name: string, body: () => void): void {
  if (upstreamPresent()) {
    describe(name, body);
  } else if (upstreamRequired) {
    describe(name, () => {
      it('needs the upstream CRDs (CI is set)', () => {
        throw new Error(`no upstream CRDs at ${UPSTREAM_DIR}, and CI is set: check out shared/ beside the clone`);
      });
    });
  } else {
    describe.skip(`${name} (${NO_UPSTREAM})`, body);
  }
}

export interface UpstreamCrd {
  file: string;
  path: string;
  crd: Record<string, any>;
}

/** Every CustomResourceDefinition in the upstream reference files. */
export function upstreamCrds(): UpstreamCrd[] {
  if (!upstreamPresent()) throw new Error(`no upstream CRDs at ${UPSTREAM_DIR} (a test reading them must be inside describeWithUpstream)`);
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

/** The upstream CRD called `name` (one of UPSTREAM_CRD_NAMES). */
export function upstreamCrd(name: (typeof UPSTREAM_CRD_NAMES)[number]): UpstreamCrd {
  const found = upstreamCrds().find((u) => u.crd.metadata?.name === name);
  if (!found) throw new Error(`no CRD ${name} in ${UPSTREAM_DIR}`);
  return found;
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
