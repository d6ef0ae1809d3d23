import type { KubeObject, ResourceType } from '../types.js';
import { invalid, type StatusCause } from '../store/errors.js';
import { isObject, type JsonSchemaProps } from './schema.js';

/** What a served CustomResourceDefinition contributes to the API: its resource type and each version's schema. */
export interface CrdServing {
  type: ResourceType;
  /** Schema of the served version (`type.version`). */
  schema: JsonSchemaProps;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema?: { openAPIV3Schema?: JsonSchemaProps };
  subresources?: { status?: object; scale?: object };
  additionalPrinterColumns?: unknown[];
}

const SCOPES = ['Cluster', 'Namespaced'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Defaults and validates a CustomResourceDefinition on create and update (the parts of kube-apiserver's CRD strategy
 * that the simulator's clients can meet), in place, and sets the status the apiextensions controllers would reach at
 * once: names accepted, established, stored versions. Throws 422 Invalid with field causes.
 */
export function prepareCrd(crd: KubeObject, old: KubeObject | undefined): void {
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
  if (typeof names.plural === 'string' && names.plural !== '' && !DNS_LABEL.test(names.plural)) {
    causes.push({ type: 'FieldValueInvalid', field: 'spec.names.plural', message: `Invalid value: ${JSON.stringify(names.plural)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character` });
  }
  if (typeof spec.group === 'string' && spec.group !== '' && !spec.group.includes('.')) {
    causes.push({ type: 'FieldValueInvalid', field: 'spec.group', message: `Invalid value: ${JSON.stringify(spec.group)}: should be a domain with at least one dot` });
  }
  if (typeof names.plural === 'string' && typeof spec.group === 'string' && crd.metadata.name !== `${names.plural}.${spec.group}`) {
    causes.push({ type: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(crd.metadata.name)}: must be spec.names.plural+"."+spec.group` });
  }
  if (typeof spec.scope !== 'string' || spec.scope === '') causes.push({ type: 'FieldValueRequired', field: 'spec.scope', message: 'Required value' });
  else if (!SCOPES.includes(spec.scope)) causes.push({ type: 'FieldValueNotSupported', field: 'spec.scope', message: `Unsupported value: ${JSON.stringify(spec.scope)}: supported values: "Cluster", "Namespaced"` });
  const versions = Array.isArray(spec.versions) ? (spec.versions as CrdVersion[]) : [];
  if (versions.length === 0) causes.push({ type: 'FieldValueInvalid', field: 'spec.versions', message: 'Invalid value: "null": must have exactly one version marked as storage version' });
  else if (versions.filter((v) => v?.storage === true).length !== 1) {
    causes.push({ type: 'FieldValueInvalid', field: 'spec.versions', message: `Invalid value: ${JSON.stringify(versions)}: must have exactly one version marked as storage version` });
  }
  versions.forEach((version, i) => {
    const at = `spec.versions[${i}]`;
    if (!isObject(version)) return;
    required(`${at}.name`, version.name);
    if (typeof version.served !== 'boolean') causes.push({ type: 'FieldValueRequired', field: `${at}.served`, message: 'Required value' });
    if (typeof version.storage !== 'boolean') causes.push({ type: 'FieldValueRequired', field: `${at}.storage`, message: 'Required value' });
    const schema = version.schema?.openAPIV3Schema;
    if (!isObject(schema)) causes.push({ type: 'FieldValueRequired', field: `${at}.schema.openAPIV3Schema`, message: 'Required value: schemas are required' });
    else checkStructural(schema as JsonSchemaProps, [`${at}.schema.openAPIV3Schema`], true, causes);
  });
  if (old && isObject(old.spec)) {
    const before = old.spec as Record<string, any>;
    if (before.group !== spec.group) causes.push({ type: 'FieldValueInvalid', field: 'spec.group', message: `Invalid value: ${JSON.stringify(spec.group)}: field is immutable` });
    if (before.names?.plural !== names.plural) causes.push({ type: 'FieldValueInvalid', field: 'spec.names.plural', message: `Invalid value: ${JSON.stringify(names.plural)}: field is immutable` });
    // kube-apiserver allows a scope change only while no object exists; the simulator keeps it fixed.
    if (before.scope !== spec.scope) causes.push({ type: 'FieldValueInvalid', field: 'spec.scope', message: `Invalid value: ${JSON.stringify(spec.scope)}: field is immutable` });
  }
  if (causes.length > 0) throw invalid('CustomResourceDefinition', crd.metadata.name, causes, 'apiextensions.k8s.io');

  const storage = versions.find((v) => v.storage)!.name;
  const stored = Array.isArray(old?.status?.storedVersions) ? [...(old!.status.storedVersions as string[])] : [];
  if (!stored.includes(storage)) stored.push(storage);
  const since = old?.status?.conditions?.find((c: { type: string }) => c.type === 'Established')?.lastTransitionTime ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const condition = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: since, reason, message });
  crd.status = {
    conditions: [condition('NamesAccepted', 'NoConflicts', 'no conflicts found'), condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted')],
    acceptedNames: { ...names },
    storedVersions: stored,
  };
}

/**
 * The structural-schema rules kube-apiserver enforces on a CRD's schema that matter to pruning: every node has a
 * `type` (except int-or-string and preserve-unknown-fields nodes), the root is an object, `properties` and
 * `additionalProperties` do not mix.
 */
function checkStructural(schema: JsonSchemaProps, path: string[], root: boolean, causes: StatusCause[]): void {
  const at = (...more: string[]) => [...path, ...more].join('');
  const free = schema['x-kubernetes-int-or-string'] === true || schema['x-kubernetes-preserve-unknown-fields'] === true;
  if (!schema.type && !free) causes.push({ type: 'FieldValueRequired', field: at('.type'), message: 'Required value: must not be empty for specified object fields' });
  if (root && schema.type && schema.type !== 'object') causes.push({ type: 'FieldValueInvalid', field: at('.type'), message: `Invalid value: ${JSON.stringify(schema.type)}: must be object at the root` });
  if (schema.properties && schema.additionalProperties !== undefined && schema.additionalProperties !== false) {
    causes.push({ type: 'FieldValueForbidden', field: at('.additionalProperties'), message: 'Forbidden: additionalProperties and properties are mutual exclusive' });
  }
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    if (isObject(sub)) checkStructural(sub, [...path, `.properties[${key}]`], false, causes);
  }
  if (isObject(schema.additionalProperties)) checkStructural(schema.additionalProperties, [...path, '.additionalProperties'], false, causes);
  if (isObject(schema.items)) checkStructural(schema.items, [...path, '.items'], false, causes);
  else if (schema.type === 'array') causes.push({ type: 'FieldValueRequired', field: at('.items'), message: 'Required value: must be specified' });
}

/** The resource type and schema a (valid) CRD serves: its storage version, or its first served one. */
export function crdServing(crd: KubeObject): CrdServing | undefined {
  const spec = crd.spec;
  const versions = (spec.versions as CrdVersion[]).filter((v) => v.served);
  const version = versions.find((v) => v.storage) ?? versions[0];
  if (!version) return undefined;
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
  if (Array.isArray(names.shortNames) && names.shortNames.length > 0) type.shortNames = [...names.shortNames];
  if (Array.isArray(names.categories) && names.categories.length > 0) type.categories = [...names.categories];
  if (Array.isArray(version.additionalPrinterColumns)) type.printerColumns = version.additionalPrinterColumns as ResourceType['printerColumns'];
  return { type: Object.freeze(type), schema: version.schema!.openAPIV3Schema! };
}

