import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generateClusterPki, loadRootCa, serial } from '../../../../src/kinds/virtualCluster/controller/pki.js';
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
    // Upstream's names: `<svc>.<ns>` (not the .svc forms) and the VirtualCluster's name (see pkiUpstream.test.ts).
    expect(apiserver.subjectAltName).toContain('DNS:apiserver-svc.default-abc123-vc-1');
    expect(apiserver.subjectAltName).toContain('DNS:vc-1');
    expect(apiserver.subjectAltName).toContain('IP Address:10.96.0.10');
    expect(apiserver.checkPrivateKey(createPrivateKey(pem(pki.secrets['apiserver-ca']!, 'tls.key')))).toBe(true);
    for (const name of ['etcd-ca', 'front-proxy-ca']) {
      expect(new X509Certificate(pem(pki.secrets[name]!, 'tls.crt')).verify(root.publicKey)).toBe(true);
    }
    // As upstream: front-proxy-ca holds the front-proxy-client client certificate, not a CA.
    expect(new X509Certificate(pem(pki.secrets['front-proxy-ca']!, 'tls.crt')).ca).toBe(false);

    const kubeconfig = parseYaml(pem(pki.secrets['controller-manager-kubeconfig']!, 'controller-manager-kubeconfig'));
    // Upstream dials the ClusterIP when the apiserver Service has one (finalAPIAddress), always on 6443.
    expect(kubeconfig.clusters[0].cluster.server).toBe('https://10.96.0.10:6443');
    const client = new X509Certificate(Buffer.from(kubeconfig.users[0].user['client-certificate-data'], 'base64'));
    expect(client.subject).toContain('CN=system:kube-controller-manager');
    expect(client.verify(root.publicKey)).toBe(true);

    const sa = pki.secrets['serviceaccount-rsa']!;
    expect(Object.keys(sa).sort()).toEqual(['tls.crt', 'tls.key']);
    const signature = sign('sha256', Buffer.from('token'), createPrivateKey(pem(sa, 'tls.key')));
    expect(verify('sha256', Buffer.from('token'), createPublicKey(pem(sa, 'tls.crt')), signature)).toBe(true);
  });

  it('issues certificates with the extensions and names kube-apiserver expects, as @peculiar/x509 reads them', async () => {
    const pki = await generateClusterPki({ ...input, expireDays: 30 }, { now: Date.parse('2026-12-01T00:00:00Z') });
    const root = new x509.X509Certificate(pem(pki.rootCa, 'tls.crt'));
    const rootKeyId = root.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
    const leaf = new x509.X509Certificate(pem(pki.secrets['apiserver-ca']!, 'tls.crt'));
    // Upstream's CN is the cluster namespace (ToClusterKey); leaves start when the root does.
    expect(leaf.subject).toBe('CN=default-abc123-vc-1');
    expect(leaf.issuer).toBe(root.subject);
    expect(leaf.notBefore.getTime()).toBe(root.notBefore.getTime());
    expect(leaf.notAfter.getTime()).toBe(Date.parse('2026-12-01T00:00:00Z') + 30 * 86_400_000);
    // Go writes no basicConstraints for upstream's leaf templates (BasicConstraintsValid unset).
    expect(leaf.getExtension(x509.BasicConstraintsExtension)).toBeNull();
    const usage = leaf.getExtension(x509.KeyUsagesExtension)!;
    expect([usage.usages, usage.critical]).toEqual([x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true]);
    expect(leaf.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]);
    expect(leaf.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(rootKeyId);
    expect(await leaf.verify({ publicKey: await root.publicKey.export() })).toBe(true);

    const frontProxy = new x509.X509Certificate(pem(pki.secrets['front-proxy-ca']!, 'tls.crt'));
    expect(frontProxy.subject).toBe('CN=front-proxy-client');
    expect(frontProxy.getExtension(x509.BasicConstraintsExtension)).toBeNull();
    expect(frontProxy.getExtension(x509.KeyUsagesExtension)!.usages & x509.KeyUsageFlags.keyCertSign).toBeFalsy();
    expect(frontProxy.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);

    const admin = parseYaml(pem(pki.secrets['admin-kubeconfig']!, 'admin-kubeconfig'));
    const adminCert = new x509.X509Certificate(Buffer.from(admin.users[0].user['client-certificate-data'], 'base64').toString());
    // Go writes O before CN.
    expect(adminCert.subject).toBe('O=system:masters, CN=admin');
    expect(adminCert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
  });

  it('draws serials that are positive minimal DER integers (a leading zero byte made OpenSSL refuse 1 certificate in 256)', () => {
    for (let i = 0; i < 20_000; i++) {
      const first = Buffer.from(serial(), 'hex')[0]!;
      expect(first >= 0x01 && first <= 0x7f, `first byte 0x${first.toString(16)}`).toBe(true);
    }
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

  it('under RSA (the default) re-encodes a PKCS#8 RSA root as PKCS#1 with the same key and certificate, and replaces an ECDSA root', async () => {
    const rsa = await generateClusterPki(input);
    const pkcs8 = {
      ...rsa.rootCa,
      'tls.key': Buffer.from(createPrivateKey(pem(rsa.rootCa, 'tls.key')).export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64'),
    };
    const reencoded = await generateClusterPki({ ...input, rootCaData: pkcs8 });
    expect([reencoded.rootCaGenerated, reencoded.rootCaReencoded]).toEqual([false, true]);
    expect(reencoded.rootCa).toEqual(rsa.rootCa); // PKCS#1 again, byte for byte

    const ecdsa = await generateClusterPki(input, { keyAlgorithm: 'ecdsa-p256' });
    expect(pem(ecdsa.rootCa, 'tls.key')).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    const replaced = await generateClusterPki({ ...input, rootCaData: ecdsa.rootCa });
    expect(replaced.rootCaGenerated).toBe(true);
    expect(replaced.rootCaProblem).toBe('root-ca key is ECDSA; the vc-manager reads root-ca only as a PKCS#1 RSA key');
    expect(pem(replaced.rootCa, 'tls.key')).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    // Chosen explicitly, ECDSA keeps an ECDSA root and says what it breaks.
    const kept = await generateClusterPki({ ...input, rootCaData: ecdsa.rootCa }, { keyAlgorithm: 'ecdsa-p256' });
    expect(kept.rootCaGenerated).toBe(false);
    expect(kept.warnings).toEqual([expect.stringContaining('breaks the CAPN vc-manager')]);
    expect(replaced.warnings).toEqual([]);
  });
});
