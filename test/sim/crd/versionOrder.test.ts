import { describe, expect, it } from 'vitest';
import { byVersionPriority, compareKubeAwareVersions } from '../../../src/sim/crd/versionOrder.js';

describe('Kubernetes version priority', () => {
  it('orders GA before beta before alpha, then by major, then by minor, other names last in string order', () => {
    // The example of the CRD versioning documentation.
    const shuffled = ['foo10', 'v11alpha2', 'v1', 'v3beta1', 'v12alpha1', 'foo1', 'v10beta3', 'v11beta2', 'v2'];
    expect(byVersionPriority(shuffled)).toEqual(['v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10']);
  });

  it('compares pairwise with the sign of the higher priority', () => {
    expect(compareKubeAwareVersions('v1', 'v1beta1')).toBeGreaterThan(0);
    expect(compareKubeAwareVersions('v1beta2', 'v1beta1')).toBeGreaterThan(0);
    expect(compareKubeAwareVersions('v1alpha1', 'v1beta1')).toBeLessThan(0);
    expect(compareKubeAwareVersions('v1', 'v2beta1')).toBeGreaterThan(0);
    expect(compareKubeAwareVersions('v1alpha1', 'v1alpha1')).toBe(0);
    expect(compareKubeAwareVersions('zeta', 'v1alpha1')).toBeLessThan(0);
  });
});
