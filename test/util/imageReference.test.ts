import { describe, expect, it } from 'vitest';
import { isDowngrade, parseImageReference } from '../../src/util/imageReference.js';

describe('parseImageReference', () => {
  it.each([
    ['rancher/harvester-vm-dhcp-agent:v0.3.0', { repository: 'rancher/harvester-vm-dhcp-agent', tag: 'v0.3.0' }],
    ['busybox', { repository: 'busybox' }],
    ['localhost:5000/agent:1.0', { registry: 'localhost:5000', repository: 'agent', tag: '1.0' }],
    [
      'registry.example.com:5000/team/agent/x@sha256:' + 'a'.repeat(64),
      { registry: 'registry.example.com:5000', repository: 'team/agent/x', digest: 'sha256:' + 'a'.repeat(64) },
    ],
    [
      'quay.io/confidential-containers/cloud-api-adaptor:v0.10.0@sha256:' + 'b'.repeat(64),
      { registry: 'quay.io', repository: 'confidential-containers/cloud-api-adaptor', tag: 'v0.10.0' },
    ],
  ])('accepts %s', (ref, expected) => {
    expect(parseImageReference(ref)).toMatchObject(expected);
  });

  it.each([
    ['', /empty/],
    ['Agent:v1', /path component "Agent"/],
    ['agent:', /tag/],
    ['agent:-bad', /tag/],
    ['agent@sha256:123', /digest/],
    ['registry.example.com:99999/agent', /port/],
    ['a//b', /empty component/],
    ['agent v1', /whitespace/],
    ['reg_istry.com/agent', /path component|registry/],
    ['agent:' + 'x'.repeat(200), /tag/],
    ['agent;rm -rf', /whitespace|path component/],
  ])('refuses %j naming the problem', (ref, reason) => {
    expect(() => parseImageReference(ref, 'input.image')).toThrowError(reason);
    expect(() => parseImageReference(ref, 'input.image')).toThrowError(/^input\.image: /);
  });
});

describe('isDowngrade', () => {
  it('compares semver tags of the same repository', () => {
    expect(isDowngrade('a/agent:v0.3.0', 'a/agent:v0.2.9')).toBe(true);
    expect(isDowngrade('a/agent:v0.3.0', 'a/agent:v0.3.1')).toBe(false);
    expect(isDowngrade('a/agent:v1.0.0', 'a/agent:v1.0.0-rc.1')).toBe(true);
    expect(isDowngrade('a/agent:v1.0.0-rc.2', 'a/agent:v1.0.0-rc.10')).toBe(false);
    expect(isDowngrade('a/agent:latest', 'a/agent:v0.1.0')).toBe(false);
    expect(isDowngrade('a/agent:v2.0.0', 'b/agent:v1.0.0')).toBe(false);
  });
});
