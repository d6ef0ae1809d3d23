import type { KubeObject, ResourceType } from '../types.js';
import { invalid, type StatusCause } from '../store/errors.js';
import { isDns1035Label, isDns1123Label, namesProblem } from '../../util/dnsNames.js';
import { isObject, type JsonSchemaProps } from './schema.js';
import { byVersionPriority, compareKubeAwareVersions } from './versionOrder.js';

/**
 * What a CustomResourceDefinition contributes to the API: one resource type per served version (conversion None:
 * the same objects, each version's schema), the storage version's type, and every version's schema by name.
 */
export interface CrdServing {
  /** The storage version's type: what in-process code and the store's events use, served or not. */
  storage: ResourceType;
  /** One type per `served: true` version, in the CRD's order. */
  served: ResourceType[];
  /** version name → its schema, for every version (served or not: objects stored in it are read through it). */
  schemas: Map<string, JsonSchemaProps>;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: JsonSchemaProps };
  subresources?: { status?: object; scale?: object };
  additionalPrinterColumns?: unknown[];
}

const SCOPES = ['Cluster', 'Namespaced'];

/**
 * Defaults and validates a CustomResourceDefinition on create and update (the parts of kube-apiserver's CRD strategy
 * that the simulator's clients can meet), in place, and sets the status the apiextensions controllers would reach at
 * once: names accepted, established, stored versions. Throws 422 Invalid with field causes.
 */
export function prepareCrd(crd: KubeObject, old: KubeObject | undefined, subresource?: string): void {
  if (!isObject(crd.spec)) crd.spec = {};
  const spec = crd.spec;
  if (!isObject(spec.names)) spec.names = {};
  const names = spec.names;
  if (typeof names.kind === 'string' && names.kind !== '') {
    names.singular ??= names.kind.toLowerCase();
    names.listKind ??= `${names.kind}List`;
  }
  spec.conversion ??= { strategy: 'None' };
  const causes: StatusCause[] = [];
  const required = (field: string, value: unknown) => {
    if (typeof value !== 'string' || value === '') causes.push({ type: 'FieldValueRequired', field, message: 'Required value' });
  };
  required('spec.group', spec.group);
  required('spec.names.plural', names.plural);
  required('spec.names.kind', names.kind);
  required('spec.names.listKind', names.listKind);
  const pluralProblem = typeof names.plural === 'string' && names.plural !== '' ? namesProblem(isDns1123Label(names.plural)) : undefined;
  if (pluralProblem) {
    causes.push({ type: 'FieldValueInvalid', field: 'spec.names.plural', message: `Invalid value: ${JSON.stringify(names.plural)}: ${pluralProblem}` });
  }
  if (typeof spec.group === 'string' && spec.group !== '' && !spec.group.includes('.')) {
    causes.push({
      type: 'FieldValueInvalid',
      field: 'spec.group',
      message: `Invalid value: ${JSON.stringify(spec.group)}: should be a domain with at least one dot`,
    });
  }
  if (typeof names.plural === 'string' && typeof spec.group === 'string' && crd.metadata.name !== `${names.plural}.${spec.group}`) {
    causes.push({
      type: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: ${JSON.stringify(crd.metadata.name)}: must be spec.names.plural+"."+spec.group`,
    });
  }
  if (typeof spec.scope !== 'string' || spec.scope === '') causes.push({ type: 'FieldValueRequired', field: 'spec.scope', message: 'Required value' });
  else if (!SCOPES.includes(spec.scope))
    causes.push({
      type: 'FieldValueNotSupported',
      field: 'spec.scope',
      message: `Unsupported value: ${JSON.stringify(spec.scope)}: supported values: "Cluster", "Namespaced"`,
    });
  const versions = Array.isArray(spec.versions) ? (spec.versions as CrdVersion[]) : [];
  if (versions.length === 0)
    causes.push({
      type: 'FieldValueInvalid',
      field: 'spec.versions',
      message: 'Invalid value: "null": must have exactly one version marked as storage version',
    });
  else if (versions.filter((v) => v?.storage === true).length !== 1) {
    causes.push({
      type: 'FieldValueInvalid',
      field: 'spec.versions',
      message: `Invalid value: ${JSON.stringify(versions)}: must have exactly one version marked as storage version`,
    });
  }
  const seen = new Set<string>();
  versions.forEach((version, i) => {
    const at = `spec.versions[${i}]`;
    if (!isObject(version)) return;
    required(`${at}.name`, version.name);
    if (typeof version.name === 'string' && version.name !== '') {
      const nameProblem = namesProblem(isDns1035Label(version.name));
      if (nameProblem)
        causes.push({ type: 'FieldValueInvalid', field: `${at}.name`, message: `Invalid value: ${JSON.stringify(version.name)}: ${nameProblem}` });
      if (seen.has(version.name))
        causes.push({
          type: 'FieldValueInvalid',
          field: 'spec.versions',
          message: `Invalid value: ${JSON.stringify(versions)}: must contain unique version names`,
        });
      seen.add(version.name);
    }
    if (typeof version.served !== 'boolean') causes.push({ type: 'FieldValueRequired', field: `${at}.served`, message: 'Required value' });
    if (typeof version.storage !== 'boolean') causes.push({ type: 'FieldValueRequired', field: `${at}.storage`, message: 'Required value' });
    const schema = version.schema?.openAPIV3Schema;
    if (!isObject(schema)) causes.push({ type: 'FieldValueRequired', field: `${at}.schema.openAPIV3Schema`, message: 'Required value: schemas are required' });
    else checkStructural(schema as JsonSchemaProps, [`${at}.schema.openAPIV3Schema`], true, causes);
  });
  if (old && isObject(old.spec)) {
    const before = old.spec as Record<string, any>;
    if (before.group !== spec.group)
      causes.push({ type: 'FieldValueInvalid', field: 'spec.group', message: `Invalid value: ${JSON.stringify(spec.group)}: field is immutable` });
    if (before.names?.plural !== names.plural)
      causes.push({ type: 'FieldValueInvalid', field: 'spec.names.plural', message: `Invalid value: ${JSON.stringify(names.plural)}: field is immutable` });
    // kube-apiserver allows a scope change only while no object exists; the simulator keeps it fixed.
    if (before.scope !== spec.scope)
      causes.push({ type: 'FieldValueInvalid', field: 'spec.scope', message: `Invalid value: ${JSON.stringify(spec.scope)}: field is immutable` });
  }
  checkConversion(spec.conversion, versions, causes);
  if (causes.length > 0) throw invalid('CustomResourceDefinition', crd.metadata.name, causes, 'apiextensions.k8s.io');

  const storage = versions.find((v) => v.storage)!.name;
  const stored = storedVersions(crd, old, subresource, storage);
  checkStoredVersions(stored, versions, causes);
  if (causes.length > 0) throw invalid('CustomResourceDefinition', crd.metadata.name, causes, 'apiextensions.k8s.io');
  const since =
    old?.status?.conditions?.find((c: { type: string }) => c.type === 'Established')?.lastTransitionTime ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const condition = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: since, reason, message });
  crd.status = {
    conditions: [
      condition('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    acceptedNames: { ...names },
    storedVersions: stored,
  };
}

/**
 * `spec.conversion`: None or Webhook, as kube-apiserver accepts them. The simulator calls no conversion webhook, so a
 * Webhook CRD is refused (422, saying so) when it has more than one version, where a webhook would be called; with a
 * single version no conversion ever happens and it is served like None.
 */
function checkConversion(conversion: unknown, versions: CrdVersion[], causes: StatusCause[]): void {
  if (!isObject(conversion)) return;
  const strategy = conversion.strategy;
  if (strategy !== 'None' && strategy !== 'Webhook') {
    causes.push({
      type: 'FieldValueNotSupported',
      field: 'spec.conversion.strategy',
      message: `Unsupported value: ${JSON.stringify(strategy)}: supported values: "None", "Webhook"`,
    });
    return;
  }
  const webhook = conversion.webhook;
  if (strategy === 'None') {
    if (webhook !== undefined && webhook !== null)
      causes.push({
        type: 'FieldValueForbidden',
        field: 'spec.conversion.webhook',
        message: 'Forbidden: should not be set when strategy is not set to Webhook',
      });
    return;
  }
  if (!isObject(webhook) || !isObject(webhook.clientConfig)) {
    causes.push({ type: 'FieldValueRequired', field: 'spec.conversion.webhook', message: 'Required value: required when strategy is set to Webhook' });
  }
  if (versions.length > 1) {
    causes.push({
      type: 'FieldValueNotSupported',
      field: 'spec.conversion.strategy',
      message: 'Unsupported value: "Webhook": the rollplane simulator calls no conversion webhook; a CRD with more than one version must use strategy None',
    });
  }
}

/**
 * The stored versions after this write: on the status subresource, the ones the client writes (a storage migration
 * removes old ones this way); otherwise the old ones plus the storage version, as the CRD strategy keeps them.
 */
function storedVersions(crd: KubeObject, old: KubeObject | undefined, subresource: string | undefined, storage: string): string[] {
  const written = crd.status?.storedVersions;
  if (subresource === 'status' && Array.isArray(written)) return written.filter((v): v is string => typeof v === 'string');
  const stored = Array.isArray(old?.status?.storedVersions) ? [...(old!.status.storedVersions as string[])] : [];
  if (!stored.includes(storage)) stored.push(storage);
  return stored;
}

/** kube-apiserver's rule: a version that was ever a storage version stays in spec.versions until migrated away. */
function checkStoredVersions(stored: string[], versions: CrdVersion[], causes: StatusCause[]): void {
  if (stored.length === 0) {
    causes.push({ type: 'FieldValueInvalid', field: 'status.storedVersions', message: 'Invalid value: []: must have at least one stored version' });
    return;
  }
  for (const version of versions) {
    if (version.storage && !stored.includes(version.name)) {
      causes.push({
        type: 'FieldValueInvalid',
        field: 'status.storedVersions',
        message: `Invalid value: ${JSON.stringify(stored)}: must have the storage version ${version.name}`,
      });
    }
  }
  stored.forEach((name, i) => {
    if (versions.some((v) => v.name === name)) return;
    causes.push({
      type: 'FieldValueInvalid',
      field: `status.storedVersions[${i}]`,
      message: `Invalid value: ${JSON.stringify(name)}: missing from spec.versions; ${name} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${name} and removes ${name} from status.storedVersions`,
    });
  });
}

/**
 * The structural-schema rules kube-apiserver enforces on a CRD's schema that matter to pruning: every node has a
 * `type` (except int-or-string and preserve-unknown-fields nodes), the root is an object, `properties` and
 * `additionalProperties` do not mix.
 */
function checkStructural(schema: JsonSchemaProps, path: string[], root: boolean, causes: StatusCause[]): void {
  const at = (...more: string[]) => [...path, ...more].join('');
  const free = schema['x-kubernetes-int-or-string'] === true || schema['x-kubernetes-preserve-unknown-fields'] === true;
  if (!schema.type && !free)
    causes.push({ type: 'FieldValueRequired', field: at('.type'), message: 'Required value: must not be empty for specified object fields' });
  if (root && schema.type && schema.type !== 'object')
    causes.push({ type: 'FieldValueInvalid', field: at('.type'), message: `Invalid value: ${JSON.stringify(schema.type)}: must be object at the root` });
  if (schema.properties && schema.additionalProperties !== undefined && schema.additionalProperties !== false) {
    causes.push({
      type: 'FieldValueForbidden',
      field: at('.additionalProperties'),
      message: 'Forbidden: additionalProperties and properties are mutual exclusive',
    });
  }
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    if (isObject(sub)) checkStructural(sub, [...path, `.properties[${key}]`], false, causes);
  }
  if (isObject(schema.additionalProperties)) checkStructural(schema.additionalProperties, [...path, '.additionalProperties'], false, causes);
  if (isObject(schema.items)) checkStructural(schema.items, [...path, '.items'], false, causes);
  else if (schema.type === 'array') causes.push({ type: 'FieldValueRequired', field: at('.items'), message: 'Required value: must be specified' });
}

/** What a (valid) CRD serves: a type per served version, the storage version's type, and every version's schema. */
export function crdServing(crd: KubeObject): CrdServing {
  const spec = crd.spec;
  const versions = spec.versions as CrdVersion[];
  const storage = versions.find((v) => v.storage)!;
  const schemas = new Map(versions.map((v) => [v.name, v.schema!.openAPIV3Schema!] as const));
  const served = versions.filter((v) => v.served).map((v) => versionType(crd, v, storage.name));
  return { storage: served.find((t) => t.version === storage.name) ?? versionType(crd, storage, storage.name), served, schemas };
}

function versionType(crd: KubeObject, version: CrdVersion, storageVersion: string): ResourceType {
  const spec = crd.spec;
  const names = spec.names;
  const type: ResourceType = {
    group: spec.group,
    version: version.name,
    plural: names.plural,
    kind: names.kind,
    namespaced: spec.scope === 'Namespaced',
    subresources: version.subresources?.status ? ['status'] : [],
    singular: names.singular,
    listKind: names.listKind,
    custom: true,
    schema: version.schema!.openAPIV3Schema!,
  };
  if (version.name !== storageVersion) type.storageVersion = storageVersion;
  if (version.deprecated === true) type.deprecationWarning = version.deprecationWarning ?? defaultDeprecationWarning(version.name, crd);
  if (Array.isArray(names.shortNames) && names.shortNames.length > 0) type.shortNames = [...names.shortNames];
  if (Array.isArray(names.categories) && names.categories.length > 0) type.categories = [...names.categories];
  if (Array.isArray(version.additionalPrinterColumns)) type.printerColumns = version.additionalPrinterColumns as ResourceType['printerColumns'];
  return Object.freeze(type);
}

/** kube-apiserver's warning for a deprecated version: it names the highest served, not deprecated, newer version. */
function defaultDeprecationWarning(deprecated: string, crd: KubeObject): string {
  const { group, names } = crd.spec;
  const message = `${group}/${deprecated} ${names.kind} is deprecated`;
  const newer = (crd.spec.versions as CrdVersion[])
    .filter((v) => v.served && !v.deprecated && compareKubeAwareVersions(deprecated, v.name) < 0)
    .map((v) => v.name);
  if (newer.length === 0) return message;
  return `${message}; use ${group}/${byVersionPriority(newer)[0]} ${names.kind}`;
}
