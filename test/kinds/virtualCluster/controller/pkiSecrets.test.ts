import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/sim/types.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const text = (secret: KubeObject | undefined, key: string) => Buffer.from((secret!.data as Record<string, string>)[key]!, 'base64').toString('utf8');

describe('regenerated PKI secrets', () => {
  it('keep the shape upstream gives them: kubernetes.io/tls key pairs (the service-account key as tls.crt/tls.key), Opaque kubeconfigs', async () => {
    h = await startHarness();
    const before = h.controlPlane('vc-1', 'secrets', 'serviceaccount-rsa')!;
    expect(before.type).toBe('kubernetes.io/tls');
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=4'];
    });
    h.optIn('vc-1');
    const vc = await h.upgradeEnded('vc-1');
    expect(vc.status.reason).toBe('TenantControlPlaneUpgradeCompleted');

    for (const name of ['apiserver-ca', 'etcd-ca', 'front-proxy-ca', 'serviceaccount-rsa']) {
      const secret = h.controlPlane('vc-1', 'secrets', name)!;
      expect(secret.type, name).toBe('kubernetes.io/tls');
      expect(Object.keys(secret.data as object).sort(), name).toEqual(['tls.crt', 'tls.key']);
    }
    for (const name of ['controller-manager-kubeconfig', 'admin-kubeconfig']) {
      const secret = h.controlPlane('vc-1', 'secrets', name)!;
      expect(secret.type, name).toBe('Opaque');
      expect(Object.keys(secret.data as object), name).toEqual([name]);
    }
    // The service-account key was rotated where the apiserver reads it (tls.key), and tls.crt is its public half.
    const sa = h.controlPlane('vc-1', 'secrets', 'serviceaccount-rsa')!;
    expect(text(sa, 'tls.key')).not.toBe(text(before, 'tls.key'));
    const signature = sign('sha256', Buffer.from('token'), createPrivateKey(text(sa, 'tls.key')));
    expect(verify('sha256', Buffer.from('token'), createPublicKey(text(sa, 'tls.crt')), signature)).toBe(true);
  });
});
