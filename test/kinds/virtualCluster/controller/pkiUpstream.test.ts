/**
 * The PKI a rollplane upgrade leaves, checked against what upstream's provisioner issues for the same VirtualCluster
 * (cluster-api-provider-nested 4d19ac6: provisioner_native.go createAndApplyPKI, controller/pki/pki.go,
 * util/pki/util.go, client-go 0.21 NewSelfSignedCACert, secret/secret.go), on the strict simulator with the simulated
 * vc-manager installed with its gate off (upstream's default). The expectations are written out here from upstream's
 * source, not computed by the product's helpers.
 */
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { parse as parseYaml } from 'yaml';
import { afterEach, expect, it, vi } from 'vitest';
import { ControlPlaneApi } from '../../../../src/kinds/virtualCluster/controller/ControlPlaneApi.js';
import { prune } from '../../../../src/sim/crd/prune.js';
import { SchemaValidator } from '../../../../src/sim/crd/SchemaValidator.js';
import { Resources } from '../../../../src/sim/store/resources.js';
import { describeWithUpstream, upstreamCrds } from '../../../helpers/upstreamCrds.js';
import type { KubeObject } from '../../../../src/sim/types.js';
import { startHarness, VC_NS, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await h?.close();
  h = undefined;
});

/** The storage version's schema of an upstream CRD in ../shared/upstream. */
function upstreamSchema(plural: string): any {
  const crd = upstreamCrds().find((c) => c.crd.spec.names.plural === plural)!.crd;
  return crd.spec.versions.find((v: { storage: boolean }) => v.storage).schema.openAPIV3Schema;
}

const EXTERNAL_DOMAIN = 'vc-1.tenants.example.com';
const text = (secret: KubeObject | undefined, key: string) => Buffer.from((secret!.data as Record<string, string>)[key]!, 'base64').toString('utf8');
const SERVER_AUTH = x509.ExtendedKeyUsage.serverAuth;
const CLIENT_AUTH = x509.ExtendedKeyUsage.clientAuth;
const LEAF_USAGE = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;

/** A PKCS#1 RSA-2048 private key PEM (vcpki.DecodePrivateKeyPEM: x509.ParsePKCS1PrivateKey), matching `cert`. */
function expectPkcs1Rsa(keyPem: string, cert: X509Certificate | undefined, what: string) {
  expect(keyPem.startsWith('-----BEGIN RSA PRIVATE KEY-----\n'), what).toBe(true);
  const key = createPrivateKey({ key: keyPem, format: 'pem', type: 'pkcs1' });
  expect(key.asymmetricKeyType, what).toBe('rsa');
  expect(key.asymmetricKeyDetails?.modulusLength, what).toBe(2048);
  if (cert) expect(cert.checkPrivateKey(key), what).toBe(true);
}

interface Leaf {
  subject: string;
  eku: string[];
  dns: string[];
  ips: string[];
}

function sans(cert: x509.X509Certificate): { dns: string[]; ips: string[] } {
  const ext = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const names = ext?.names.items ?? [];
  return { dns: names.filter((n) => n.type === 'dns').map((n) => n.value), ips: names.filter((n) => n.type === 'ip').map((n) => n.value) };
}

/** NewSignedCert's template: no basicConstraints, keyUsage keyEncipherment|digitalSignature (critical), the EKUs, AKI = root SKI. */
function expectLeaf(pemText: string, root: x509.X509Certificate, rootNode: X509Certificate, expected: Leaf, what: string) {
  const cert = new x509.X509Certificate(pemText);
  expect(cert.subject, what).toBe(expected.subject);
  expect(cert.issuer, what).toBe(root.subject);
  expect((cert.signatureAlgorithm as unknown as { name: string }).name, what).toBe('RSASSA-PKCS1-v1_5');
  expect(cert.getExtension(x509.BasicConstraintsExtension), what).toBeNull();
  const usage = cert.getExtension(x509.KeyUsagesExtension)!;
  expect([usage.usages, usage.critical], what).toEqual([LEAF_USAGE, true]);
  expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages, what).toEqual(expected.eku);
  expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId, what).toBe(root.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId);
  expect(cert.getExtension(x509.SubjectKeyIdentifierExtension), what).toBeNull();
  expect(sans(cert), what).toEqual({ dns: expected.dns, ips: expected.ips });
  expect(cert.notBefore.getTime(), what).toBe(root.notBefore.getTime());
  const node = new X509Certificate(pemText);
  expect(node.verify(rootNode.publicKey), what).toBe(true);
  return node;
}

describeWithUpstream('PKI after a rollplane upgrade, beside the vc-manager with its gate off', () => {
  it("has upstream's secrets, types, keys, subjects, names, usages and PKCS#1 RSA keys for the same VirtualCluster", async () => {
    h = await startHarness({ sim: { upstream: { vcManager: {} } } });
    // Every VirtualCluster body rollplane sends (the strict simulator would store it pruned, hiding the loss).
    const sent: unknown[] = [];
    const replace = ControlPlaneApi.prototype.replaceVirtualCluster;
    vi.spyOn(ControlPlaneApi.prototype, 'replaceVirtualCluster').mockImplementation(function (this: ControlPlaneApi, vc) {
      sent.push(structuredClone(vc));
      return replace.call(this, vc);
    });
    // The external apiserver domain is a label on the VirtualCluster (constants.LabelExternalApiserverDomain).
    const labelled = structuredClone(h.vc('vc-1'));
    labelled.metadata.labels = { ...labelled.metadata.labels, 'tenancy.x-k8s.io/external-apiserver-domain': EXTERNAL_DOMAIN };
    h.sim.store.update(Resources.virtualclusters, labelled);
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=4'];
    });
    h.optIn('vc-1');
    const vc = await h.upgradeEnded('vc-1');
    expect(vc.status.reason).toBe('TenantControlPlaneUpgradeCompleted');
    const ns: string = vc.status.clusterNamespace;
    const cv = h.cv();
    const etcdSts = cv.spec.etcd.statefulset;
    const etcdSvc: string = cv.spec.etcd.service.metadata.name;
    const apiSvc: string = cv.spec.apiServer.service.metadata.name;
    expect(cv.spec.apiServer.service.spec.type).toBe('NodePort'); // so no ClusterIP goes into the certificate

    // Secret names, types and keys (secret.go).
    const secret = (name: string) => h!.controlPlane('vc-1', 'secrets', name)!;
    for (const name of ['root-ca', 'apiserver-ca', 'etcd-ca', 'front-proxy-ca', 'serviceaccount-rsa']) {
      expect(secret(name).type, name).toBe('kubernetes.io/tls');
      expect(Object.keys(secret(name).data as object).sort(), name).toEqual(['tls.crt', 'tls.key']);
    }
    for (const name of ['controller-manager-kubeconfig', 'admin-kubeconfig']) {
      expect(secret(name).type, name).toBe('Opaque');
      expect(Object.keys(secret(name).data as object), name).toEqual([name]);
    }

    // root-ca: NewSelfSignedCACert with CN kubernetes, upstream's organization, the CN as DNS name, 10 years.
    const rootPem = text(secret('root-ca'), 'tls.crt');
    const root = new x509.X509Certificate(rootPem);
    const rootNode = new X509Certificate(rootPem);
    expect(root.subject).toBe('O=kubernetes-sig.kubernetes-sigs/multi-tenancy.virtualcluster, CN=kubernetes');
    expect(root.issuer).toBe(root.subject);
    const basic = root.getExtension(x509.BasicConstraintsExtension)!;
    expect([basic.ca, basic.critical, basic.pathLength]).toEqual([true, true, undefined]);
    const rootUsage = root.getExtension(x509.KeyUsagesExtension)!;
    expect([rootUsage.usages, rootUsage.critical]).toEqual([LEAF_USAGE | x509.KeyUsageFlags.keyCertSign, true]);
    expect(root.getExtension(x509.ExtendedKeyUsageExtension)).toBeNull();
    expect(root.getExtension(x509.AuthorityKeyIdentifierExtension)).toBeNull();
    expect(sans(root)).toEqual({ dns: ['kubernetes'], ips: [] });
    expect(Math.round((root.notAfter.getTime() - root.notBefore.getTime()) / 86_400_000)).toBe(3650);
    expectPkcs1Rsa(text(secret('root-ca'), 'tls.key'), rootNode, 'root-ca');

    // apiserver-ca: CN ToClusterKey(vc), DNS kubernetes… , <svc>.<ns>, the VC name, the external domain.
    const apiserver = expectLeaf(
      text(secret('apiserver-ca'), 'tls.crt'),
      root,
      rootNode,
      {
        subject: `CN=${ns}`,
        eku: [SERVER_AUTH, CLIENT_AUTH],
        dns: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', `${apiSvc}.${ns}`, 'vc-1', EXTERNAL_DOMAIN],
        ips: [],
      },
      'apiserver-ca',
    );
    expect(apiserver.checkHost('vc-1')).toBe('vc-1');
    expect(apiserver.checkHost(EXTERNAL_DOMAIN)).toBe(EXTERNAL_DOMAIN);
    expectPkcs1Rsa(text(secret('apiserver-ca'), 'tls.key'), apiserver, 'apiserver-ca');

    // etcd-ca: CN kube-etcd; GetEtcdServers() + GetEtcdDomain(), then each with `.<ns>`; IP 127.0.0.1.
    const peers = Array.from({ length: Number(etcdSts.spec.replicas) }, (_, i) => `${etcdSts.metadata.name}-${i}.${etcdSvc}`);
    const etcd = expectLeaf(
      text(secret('etcd-ca'), 'tls.crt'),
      root,
      rootNode,
      {
        subject: 'CN=kube-etcd',
        eku: [SERVER_AUTH, CLIENT_AUTH],
        dns: [...peers, etcdSvc, ...[...peers, etcdSvc].map((n) => `${n}.${ns}`)],
        ips: ['127.0.0.1'],
      },
      'etcd-ca',
    );
    expect(etcd.checkHost('etcd-0.etcd')).toBe('etcd-0.etcd');
    expect(etcd.checkHost(`etcd-0.etcd.${ns}`)).toBe(`etcd-0.etcd.${ns}`);
    expectPkcs1Rsa(text(secret('etcd-ca'), 'tls.key'), etcd, 'etcd-ca');

    // front-proxy-ca holds the front-proxy-client client certificate.
    const frontProxy = expectLeaf(
      text(secret('front-proxy-ca'), 'tls.crt'),
      root,
      rootNode,
      { subject: 'CN=front-proxy-client', eku: [CLIENT_AUTH], dns: [], ips: [] },
      'front-proxy-ca',
    );
    expect(frontProxy.ca).toBe(false);
    expectPkcs1Rsa(text(secret('front-proxy-ca'), 'tls.key'), frontProxy, 'front-proxy-ca');

    // Kubeconfigs: upstream's template, client certificates, the root as CA, https://<svc>.<ns>:6443.
    for (const [name, subject] of [
      ['controller-manager-kubeconfig', 'CN=system:kube-controller-manager'],
      ['admin-kubeconfig', 'O=system:masters, CN=admin'],
    ] as const) {
      const config = parseYaml(text(secret(name), name));
      expect(config['current-context'], name).toBe('default');
      expect(config.contexts, name).toEqual([{ name: 'default', context: { cluster: 'vc-1', user: config.users[0].name } }]);
      expect(config.clusters[0], name).toMatchObject({ name: 'vc-1', cluster: { server: `https://${apiSvc}.${ns}:6443` } });
      expect(Buffer.from(config.clusters[0].cluster['certificate-authority-data'], 'base64').toString()).toBe(rootPem);
      const certPem = Buffer.from(config.users[0].user['client-certificate-data'], 'base64').toString();
      const client = expectLeaf(certPem, root, rootNode, { subject, eku: [CLIENT_AUTH], dns: [], ips: [] }, name);
      expectPkcs1Rsa(Buffer.from(config.users[0].user['client-key-data'], 'base64').toString(), client, name);
    }

    // serviceaccount-rsa: tls.crt the PKIX public key, tls.key its PKCS#1 private key.
    const sa = secret('serviceaccount-rsa');
    expect(text(sa, 'tls.crt').startsWith('-----BEGIN PUBLIC KEY-----\n')).toBe(true);
    expectPkcs1Rsa(text(sa, 'tls.key'), undefined, 'serviceaccount-rsa');
    expect(createPublicKey(text(sa, 'tls.crt')).export({ format: 'jwk' })).toEqual(
      createPublicKey(createPrivateKey(text(sa, 'tls.key'))).export({ format: 'jwk' }),
    );

    // Both pod templates keep upstream's cluster label; the VirtualCluster got upstream's condition appended.
    for (const sts of ['apiserver', 'controller-manager']) {
      expect(h.controlPlane('vc-1', 'statefulsets', sts)!.spec.template.metadata.labels['tenancy.x-k8s.io/cluster'], sts).toBe(ns);
    }
    const conditions = vc.status.conditions as Record<string, unknown>[];
    expect(conditions.at(-1)).toEqual({
      status: 'True',
      reason: 'TenantControlPlaneUpgradeCompleted',
      message: 'tenant control plane is upgraded',
      lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    expect(conditions.every((c) => !('type' in c))).toBe(true);
    expect(h.vc('vc-1').metadata.namespace).toBe(VC_NS);

    // What rollplane sent and what is stored pass upstream's VirtualCluster/ClusterVersion schemas, nothing pruned.
    const vcSchema = upstreamSchema('virtualclusters');
    expect(sent.length).toBeGreaterThanOrEqual(2); // the progress record and the final status
    const stored = [...sent, ...h.sim.store.list(Resources.virtualclusters)];
    for (const body of stored) {
      expect(prune(structuredClone(body) as Record<string, unknown>, vcSchema)).toEqual([]);
      expect(new SchemaValidator(vcSchema).check(body)).toEqual([]);
    }
    const cvSchema = upstreamSchema('clusterversions');
    for (const body of h.sim.store.list(Resources.clusterversions)) {
      expect(prune(structuredClone(body), cvSchema)).toEqual([]);
      expect(new SchemaValidator(cvSchema).check(body)).toEqual([]);
    }
  }, 120_000);
});
