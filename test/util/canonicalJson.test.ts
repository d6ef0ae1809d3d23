import { describe, expect, it } from 'vitest';
import { clusterSpecVersion } from '../../src/kinds/virtualCluster/plan.js';
import { templateHash } from '../../src/sim/behaviour/kube.js';
import { canonicalJson } from '../../src/util/canonicalJson.js';

describe('canonicalJson', () => {
  it('gives equal values the same text whatever the order of their keys, at any depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[{"x":2,"y":1}]},"b":1}');
    expect(canonicalJson({ a: { c: null, d: [{ x: 2, y: 1 }] }, b: 1 })).toBe(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: null } }));
  });

  it('keeps the order of arrays and leaves out undefined members, as JSON does', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
    expect(canonicalJson('x')).toBe('"x"');
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
  });

  it('hashes as before it was shared: stored ClusterVersion names and pod-template hashes do not move', () => {
    // Computed with the three implementations this one replaced (domain/virtualClusters, sim/behaviour/kube, graphql/fanOut).
    const spec = {
      version: 'v1.31.2',
      apiServer: { image: 'registry.k8s.io/kube-apiserver:v1.31.2', args: ['-v=2', '--b'], env: [{ value: 'x', name: 'A' }] },
      controllerManager: { image: 'c:1' },
      etcd: { replicas: 3 },
    };
    expect(clusterSpecVersion(spec)).toBe('spec-a5be04fc47ef');
    const template = {
      metadata: { labels: { app: 'a', 'pod-template-hash': 'x' } },
      spec: { containers: [{ name: 'c', image: 'i:1', ports: [{ containerPort: 80 }] }] },
    };
    expect(templateHash(template)).toBe('84qjjwjk2n');
  });
});
