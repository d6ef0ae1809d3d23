import { badRequest } from '../store/errors.js';
import { deepEqual, isPlainObject } from '../store/objects.js';
import { Resources } from '../store/resources.js';
import { forbiddenField, invalidField, requiredField, tooLongField, type FieldError } from './fieldErrors.js';
import { isConfigMapKey } from '../../util/dnsNames.js';
import type { KubeObject } from '../types.js';
import { isResource, type AdmissionPlugin, type Validator } from './types.js';

/** core.MaxSecretSize, also the limit of a ConfigMap's data. */
export const MAX_DATA_BYTES = 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * What decoding a v1 Secret does before anything validates it: `stringData` is merged into `data` (base64, winning
 * over a key of the same name), `type` defaults to Opaque, and a `data` value that is not base64 fails the decoding
 * with 400 as the real JSON decoder does.
 */
export const secretDecoding: AdmissionPlugin = {
  admit({ operation, type, object, subresource }) {
    if (!isResource(type, Resources.secrets) || operation === 'DELETE' || subresource !== undefined) return;
    const data: Record<string, unknown> = isPlainObject(object.data) ? { ...object.data } : {};
    for (const [key, value] of Object.entries(data)) {
      // A null value decodes to no bytes, as Go's []byte does.
      const text = value === null || value === undefined ? '' : String(value);
      const bad = firstIllegalBase64Byte(text);
      if (bad >= 0) throw badRequest(`Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte ${bad}`);
      data[key] = text;
    }
    if (isPlainObject(object.stringData)) {
      for (const [key, value] of Object.entries(object.stringData)) data[key] = Buffer.from(String(value ?? '')).toString('base64');
    }
    delete object.stringData;
    if (Object.keys(data).length > 0 || object.data !== undefined) object.data = data;
    if (!object.type) object.type = 'Opaque';
  },
};

function firstIllegalBase64Byte(text: string): number {
  if (BASE64.test(text) && text.length % 4 === 0) return -1;
  for (let i = 0; i < text.length; i++) {
    if (!/[A-Za-z0-9+/=]/.test(text[i]!)) return i;
  }
  return text.length - (text.length % 4);
}

function decodedLength(value: unknown): number {
  return Buffer.from(String(value ?? ''), 'base64').length;
}

/** ValidateSecret / ValidateSecretUpdate (pkg/apis/core/validation): keys, 1 MiB, the per-type keys, immutability. */
export const validateSecret: Validator = ({ operation, type, object, old }) => {
  if (!isResource(type, Resources.secrets) || operation === 'DELETE') return [];
  const errs: FieldError[] = [];
  if (operation === 'UPDATE' && old) {
    const oldType = old.type ?? 'Opaque';
    if (object.type !== oldType) errs.push(invalidField('type', object.type, 'field is immutable'));
    errs.push(...immutableData(object, old));
  }
  const data: Record<string, unknown> = isPlainObject(object.data) ? object.data : {};
  let total = 0;
  for (const [key, value] of Object.entries(data)) {
    for (const msg of isConfigMapKey(key)) errs.push(invalidField(`data[${key}]`, key, msg));
    total += decodedLength(value);
  }
  if (total > MAX_DATA_BYTES) errs.push(tooLongField('data', MAX_DATA_BYTES));
  const has = (key: string) => Object.hasOwn(data, key);
  switch (object.type) {
    case 'kubernetes.io/service-account-token':
      // The token controller adds the token and the uid later; the account's name is the one thing required.
      if (!object.metadata.annotations?.['kubernetes.io/service-account.name']) {
        errs.push(requiredField('metadata.annotations[kubernetes.io/service-account.name]'));
      }
      break;
    case 'kubernetes.io/dockercfg':
      errs.push(...jsonKey(data, '.dockercfg'));
      break;
    case 'kubernetes.io/dockerconfigjson':
      errs.push(...jsonKey(data, '.dockerconfigjson'));
      break;
    case 'kubernetes.io/basic-auth':
      if (!has('username') && !has('password')) errs.push(requiredField('data[username]'), requiredField('data[password]'));
      break;
    case 'kubernetes.io/ssh-auth':
      if (decodedLength(data['ssh-privatekey']) === 0) errs.push(requiredField('data[ssh-privatekey]'));
      break;
    case 'kubernetes.io/tls':
      if (!has('tls.crt')) errs.push(requiredField('data[tls.crt]'));
      if (!has('tls.key')) errs.push(requiredField('data[tls.key]'));
      break;
    default:
      break;
  }
  return errs;
};

function jsonKey(data: Record<string, unknown>, key: string): FieldError[] {
  if (!Object.hasOwn(data, key)) return [requiredField(`data[${key}]`)];
  try {
    const parsed: unknown = JSON.parse(Buffer.from(String(data[key]), 'base64').toString('utf8'));
    if (!isPlainObject(parsed)) throw new Error('json: cannot unmarshal into Go value of type map[string]interface {}');
    return [];
  } catch (error) {
    return [invalidField(`data[${key}]`, '<secret contents redacted>', (error as Error).message)];
  }
}

/** `immutable: true` freezes data and itself (Secrets and ConfigMaps alike). */
export function immutableData(object: KubeObject, old: KubeObject): FieldError[] {
  if (old.immutable !== true) return [];
  const errs: FieldError[] = [];
  if (object.immutable !== true) errs.push(forbiddenField('immutable', 'field is immutable when `immutable` is set'));
  if (!deepEqual(object.data ?? {}, old.data ?? {})) errs.push(forbiddenField('data', 'field is immutable when `immutable` is set'));
  if (old.binaryData !== undefined || object.binaryData !== undefined) {
    if (!deepEqual(object.binaryData ?? {}, old.binaryData ?? {})) errs.push(forbiddenField('binaryData', 'field is immutable when `immutable` is set'));
  }
  return errs;
}

/** ValidateConfigMap / ValidateConfigMapUpdate: keys of data and binaryData, no key in both, 1 MiB, immutability. */
export const validateConfigMap: Validator = ({ operation, type, object, old }) => {
  if (!isResource(type, Resources.configmaps) || operation === 'DELETE') return [];
  const errs: FieldError[] = [];
  if (operation === 'UPDATE' && old) errs.push(...immutableData(object, old));
  const data: Record<string, unknown> = isPlainObject(object.data) ? object.data : {};
  const binary: Record<string, unknown> = isPlainObject(object.binaryData) ? object.binaryData : {};
  let total = 0;
  for (const [key, value] of Object.entries(data)) {
    for (const msg of isConfigMapKey(key)) errs.push(invalidField(`data[${key}]`, key, msg));
    total += Buffer.byteLength(String(value ?? ''));
  }
  for (const [key, value] of Object.entries(binary)) {
    for (const msg of isConfigMapKey(key)) errs.push(invalidField(`binaryData[${key}]`, key, msg));
    if (Object.hasOwn(data, key)) errs.push(invalidField(`binaryData[${key}]`, key, 'duplicate of key present in data'));
    total += decodedLength(value);
  }
  if (total > MAX_DATA_BYTES) errs.push(tooLongField('', MAX_DATA_BYTES));
  return errs;
};
