import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isConfigMapKey,
  isDns1035Label,
  isDns1123Label,
  isDns1123Subdomain,
  isLabelKey,
  isLabelValue,
  isValidName,
  isValidPathSegmentName,
  namesProblem,
  parseNamespacedName,
} from '../../src/util/dnsNames.js';

// The messages are k8s.io/apimachinery/pkg/util/validation's, word for word (kube-apiserver answers with them).
const LABEL =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035 =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

describe('DNS-1123 labels', () => {
  it('accepts lower case alphanumerics and inner dashes, up to 63 characters', () => {
    for (const ok of ['a', '0', 'my-name', '123-abc', 'a'.repeat(63)]) expect(isDns1123Label(ok), ok).toEqual([]);
  });

  it('refuses anything else with the API server’s words', () => {
    for (const bad of ['', 'My-Name', '-a', 'a-', 'a_b']) expect(isDns1123Label(bad), bad).toEqual([LABEL]);
    expect(isDns1123Label('a.b')).toEqual(['must not contain dots']);
    expect(isDns1123Label('a'.repeat(64))).toEqual(['must be no more than 63 characters']);
  });
});

describe('DNS-1123 subdomains', () => {
  it('accepts dot-separated labels up to 253 characters', () => {
    for (const ok of ['a', 'example.com', 'a-1.b-2.c', `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`]) {
      expect(isDns1123Subdomain(ok), ok).toEqual([]);
    }
  });

  it('refuses empty labels, dashes at a label’s edge and over-long names', () => {
    for (const bad of ['', 'a..b', 'a.-b', 'a-.b', '.a', 'a.', 'Example.com']) expect(isDns1123Subdomain(bad), bad).toEqual([SUBDOMAIN]);
    expect(isDns1123Subdomain('a'.repeat(254))).toEqual(['must be no more than 253 characters']);
  });
});

describe('DNS-1035 labels', () => {
  it('must start with a letter', () => {
    expect(isDns1035Label('svc-1')).toEqual([]);
    expect(isDns1035Label('1svc')).toEqual([DNS1035]);
    expect(isDns1035Label(`s${'a'.repeat(63)}`)).toEqual(['must be no more than 63 characters']);
  });
});

describe('label keys and values', () => {
  it('takes an optional DNS-1123 subdomain prefix before a name of at most 63', () => {
    for (const ok of ['app', 'MyName', 'my.name', 'example.com/MyName', 'app.kubernetes.io/part-of']) expect(isLabelKey(ok), ok).toEqual([]);
    expect(isLabelKey('/a')).toEqual(['prefix part must be non-empty']);
    expect(isLabelKey('a/')).toContain('name part must be non-empty');
    expect(isLabelKey('Ex_ample/a')[0]).toMatch(/^prefix part a lowercase RFC 1123 subdomain/);
    expect(isLabelKey('a/b/c')[0]).toMatch(/^a valid label key must consist of alphanumeric characters/);
    expect(isLabelKey('a'.repeat(64))).toEqual(['name part must be no more than 63 characters']);
  });

  it('allows an empty value, and otherwise what a key name allows', () => {
    for (const ok of ['', 'MyValue', 'my_value', '12345']) expect(isLabelValue(ok), ok).toEqual([]);
    expect(isLabelValue('-a')[0]).toMatch(/^a valid label must be an empty string or consist of alphanumeric characters/);
  });
});

describe('config keys and path segments', () => {
  it('follow apimachinery', () => {
    expect(isConfigMapKey('key.name')).toEqual([]);
    expect(isConfigMapKey('..a')).toEqual(["must not start with '..'"]);
    expect(isValidPathSegmentName('a%b')).toEqual(["may not contain '%'"]);
  });
});

describe('namespace/name references', () => {
  it('splits a namespace (a label) from a name (a subdomain by default)', () => {
    expect(parseNamespacedName('kube-system/coredns.v1')).toEqual({ namespace: 'kube-system', name: 'coredns.v1' });
    expect(parseNamespacedName('kube-system/coredns.v1', isDns1123Label)).toBeUndefined();
    for (const bad of ['name', 'a/b/c', '/b', 'a/', 'kube.system/b', 'a/b..c', 'A/b']) expect(parseNamespacedName(bad), bad).toBeUndefined();
  });
});

describe('namesProblem and isValidName', () => {
  it('make one message of the problems, or none', () => {
    expect(namesProblem([])).toBeUndefined();
    expect(namesProblem(isDns1123Label(`A${'a'.repeat(63)}`))).toBe(`must be no more than 63 characters; ${LABEL}`);
    expect(isValidName(isDns1123Label, 'ok')).toBe(true);
    expect(isValidName(isDns1123Label, 'not ok')).toBe(false);
  });
});

describe('the name formats', () => {
  const SRC = path.resolve(import.meta.dirname, '../../src');
  // A DNS label's inner characters, however a regex spells them: `[-a-z0-9]`, `[-a-z0-9.]`, `[a-z0-9-]`...
  const DNS_CHARACTER_CLASS = /\[(?:[-.]+a-z0-9[-.]*|[-.]*a-z0-9[-.]+)\]/;

  it('are spelled in src/util/dnsNames.ts only', () => {
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f) && !f.includes('generated'));
    const spelled = files.filter((f) => f !== path.join('util', 'dnsNames.ts') && DNS_CHARACTER_CLASS.test(readFileSync(path.join(SRC, f), 'utf8')));
    expect(spelled).toEqual([]);
  });

  it('the check sees what it looks for (a broken pattern would pass everything)', () => {
    expect(DNS_CHARACTER_CLASS.test('/[a-z0-9]/')).toBe(false);
    for (const spelling of ['/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/', '[-a-z0-9.]{0,251}', '[a-z0-9-]+'])
      expect(DNS_CHARACTER_CLASS.test(spelling), spelling).toBe(true);
  });
});
