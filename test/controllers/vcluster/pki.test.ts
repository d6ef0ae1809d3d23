import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generateClusterPki, loadRootCa } from '../../../src/controllers/vcluster/pki.js';
import { pem, pkiInput as input } from './pkiFixtures.js';


describe('cluster PKI', () => {
  it('generates a root CA when the existing one is a placeholder, and signs every certificate with it', async () => {
    const placeholder = { 'tls.crt': Buffer.from('simulated certificate').toString('base64'), 'tls.key': Buffer.from('simulated key').toString('base64') };
    const pki = await generateClusterPki({ ...input, rootCaData: placeholder });
    expect(pki.rootCaGenerated).toBe(true);
    expect(pki.rootCaProblem).toMatch(/not a PEM certificate/);
    const root = new X509Certificate(pem(pki.rootCa, 'tls.crt'));
    expect(root.ca).toBe(true);
    expect(root.checkPrivateKey(createPrivateKey(pem(pki.rootCa, 'tls.key')))).toBe(true);

    const apiserver = new X509Certificate(pem(pki.secrets['apiserver-ca']!, 'tls.crt'));
    expect(apiserver.verify(root.publicKey)).toBe(true);
    expect(apiserver.checkIssued(root)).toBe(true);
    expect(apiserver.subjectAltName).toContain('DNS:apiserver-svc.default-abc123-vc-1.svc.cluster.local');
    expect(apiserver.subjectAltName).toContain('IP Address:10.96.0.10');
    expect(apiserver.checkPrivateKey(createPrivateKey(pem(pki.secrets['apiserver-ca']!, 'tls.key')))).toBe(true);
    for (const name of ['etcd-ca', 'front-proxy-ca']) {
      expect(new X509Certificate(pem(pki.secrets[name]!, 'tls.crt')).verify(root.publicKey)).toBe(true);
    }
    expect(new X509Certificate(pem(pki.secrets['front-proxy-ca']!, 'tls.crt')).ca).toBe(true);

    const kubeconfig = parseYaml(pem(pki.secrets['controller-manager-kubeconfig']!, 'controller-manager-kubeconfig'));
    expect(kubeconfig.clusters[0].cluster.server).toBe('https://apiserver-svc.default-abc123-vc-1:6443');
    const client = new X509Certificate(Buffer.from(kubeconfig.users[0].user['client-certificate-data'], 'base64'));
    expect(client.subject).toContain('CN=system:kube-controller-manager');
    expect(client.verify(root.publicKey)).toBe(true);

    const sa = pki.secrets['serviceaccount-rsa']!;
    const signature = sign('sha256', Buffer.from('token'), createPrivateKey(pem(sa, 'service-account.key')));
    expect(verify('sha256', Buffer.from('token'), createPublicKey(pem(sa, 'service-account.pub')), signature)).toBe(true);
  });

  it('keeps a valid root CA and issues new certificates on every call', async () => {
    const first = await generateClusterPki(input);
    const second = await generateClusterPki({ ...input, rootCaData: first.rootCa });
    expect(second.rootCaGenerated).toBe(false);
    expect(second.rootCa).toEqual(first.rootCa);
    expect(second.secrets['apiserver-ca']).not.toEqual(first.secrets['apiserver-ca']);
    expect(typeof (await loadRootCa(second.rootCa))).toBe('object');
  });

  it('supports RSA keys and an RSA root CA', async () => {
    const pki = await generateClusterPki(input, { keyAlgorithm: 'rsa-2048' });
    const root = new X509Certificate(pem(pki.rootCa, 'tls.crt'));
    expect(createPrivateKey(pem(pki.rootCa, 'tls.key')).asymmetricKeyType).toBe('rsa');
    expect(new X509Certificate(pem(pki.secrets['etcd-ca']!, 'tls.crt')).verify(root.publicKey)).toBe(true);
    const reused = await generateClusterPki({ ...input, rootCaData: pki.rootCa });
    expect(reused.rootCaGenerated).toBe(false);
  });
});
