/**
 * The tenant control plane's PKI exactly as upstream's native provisioner issues it (cluster-api-provider-nested
 * `provisioner/provisioner_native.go` createAndApplyPKI, `controller/pki/pki.go`, `util/pki/util.go`,
 * `controller/kubeconfig/kubeconfig.go`, commit 4d19ac6), laid out in the cluster namespace:
 * - `root-ca`: CN `kubernetes`, O `kubernetes-sig.kubernetes-sigs/multi-tenancy.virtualcluster`, DNS `kubernetes`,
 *   valid 10 years; kept across upgrades;
 * - `apiserver-ca`: the apiserver serving certificate, CN = the cluster namespace (ToClusterKey), DNS `kubernetes`,
 *   `kubernetes.default`, `kubernetes.default.svc`, `kubernetes.default.svc.<domain>`, `<apiserver svc>.<ns>`, the
 *   VirtualCluster's name, the `tenancy.x-k8s.io/external-apiserver-domain` label's value; IP the ClusterIP;
 * - `etcd-ca`: CN `kube-etcd`, DNS `<sts>-<i>.<svc>` for each replica and `<svc>`, then each of those + `.<ns>`; IP
 *   127.0.0.1;
 * - `front-proxy-ca`: the `front-proxy-client` client certificate (not a CA, despite the name);
 * - `controller-manager-kubeconfig`, `admin-kubeconfig`: client certificates (`system:kube-controller-manager`;
 *   `admin` in `system:masters`) in upstream's kubeconfig template;
 * - `serviceaccount-rsa`: the service-account key pair, tls.crt the PKIX public key, tls.key the private key.
 * Leaves: keyUsage digitalSignature+keyEncipherment, EKU serverAuth+clientAuth (serving) or clientAuth (clients),
 * valid from the root's notBefore for 365 days (or spec.pkiExpireDays, which upstream ignores).
 *
 * Keys are RSA 2048 in PKCS#1 (`RSA PRIVATE KEY`) by default, as upstream: the vc-manager decodes root-ca's key only
 * that way (vcpki.DecodePrivateKeyPEM), and kubeconfig/secret consumers expect it. `keyAlgorithm: 'ecdsa-p256'` is an
 * explicit choice that is several times cheaper to generate and breaks the vc-manager beside it (every result carries
 * that warning). ECDSA keys are written as SEC1 (`EC PRIVATE KEY`), as kubeadm writes them.
 */
import { createPrivateKey, generateKeyPair, randomBytes, X509Certificate as NodeX509, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { certificateAuthority, certificatePem, issueCertificate } from './certificates.js';
import { DEFAULT_KEY_ALGORITHM, ECDSA_WARNING, type KeyAlgorithm } from './names.js';
import type { CertificateAuthority } from './certificates.js';

// Defined with the kind's constants so that the main thread can read them without loading the ASN.1 code.
export { DEFAULT_KEY_ALGORITHM, ECDSA_WARNING, LABEL_EXTERNAL_APISERVER_DOMAIN, type KeyAlgorithm } from './names.js';

/** Upstream's root CA subject (createAndApplyPKI). */
export const ROOT_CA_COMMON_NAME = 'kubernetes';
export const ROOT_CA_ORGANIZATION = 'kubernetes-sig.kubernetes-sigs/multi-tenancy.virtualcluster';

const ROOT_CA_DAYS = 3650; // client-go's duration365d * 10
const LEAF_DAYS = 365; // util/pki CertificateValidity
const DAY_MS = 86_400_000;
/** Upstream's kubeconfigs always name port 6443 (generateKubeconfigUseCertAndKey). */
const KUBECONFIG_PORT = 6443;

export interface ClusterPkiInput {
  /** The VirtualCluster's name: a DNS name of the apiserver certificate, the kubeconfigs' cluster name. */
  clusterName: string;
  /** Where the control plane runs (ToClusterKey): the apiserver certificate's CN. */
  clusterNamespace: string;
  /** Tenant cluster DNS domain (VirtualCluster spec.clusterDomain), default cluster.local. */
  clusterDomain?: string;
  /** Value of the VirtualCluster's `tenancy.x-k8s.io/external-apiserver-domain` label, if any. */
  externalApiserverDomain?: string;
  /** Validity of issued certificates (spec.pkiExpireDays), default 365 as upstream. */
  expireDays?: number;
  apiserverServiceName: string;
  /** Kept for callers; upstream's kubeconfigs name port 6443 whatever the Service says. */
  apiserverPort: number;
  /** The apiserver Service's ClusterIP (ClusterIP Services only): an IP SAN and the kubeconfigs' server address. */
  apiserverClusterIP?: string;
  etcdServiceName: string;
  etcdStatefulSetName: string;
  etcdReplicas: number;
  /** The current `root-ca` secret data (base64 values), if any. */
  rootCaData?: Record<string, string>;
}

export interface ClusterPki {
  /** root-ca secret data: the existing one, re-encoded, or a new CA. */
  rootCa: Record<string, string>;
  rootCaGenerated: boolean;
  /** Why a new root CA was generated (missing, unparsable, expired, key mismatch, a key the vc-manager cannot read). */
  rootCaProblem?: string;
  /** The same root key, re-encoded as PKCS#1 (it was PKCS#8): root-ca must be written, trust is unchanged. */
  rootCaReencoded?: boolean;
  /** Secret name → data (base64 values), for every secret in REGENERATED_SECRETS. */
  secrets: Record<string, Record<string, string>>;
  /** Compatibility warnings (ECDSA keys). */
  warnings: string[];
}

export interface PkiOptions {
  keyAlgorithm?: KeyAlgorithm;
  /** Wall clock (ms since epoch) for validity periods; default Date.now(). */
  now?: number;
}

interface Issuer {
  ca: CertificateAuthority;
  certPem: string;
}

const b64 = (text: string) => Buffer.from(text).toString('base64');
const fromB64 = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8'));

/**
 * A random positive serial whose DER INTEGER is minimal: a leading 0x00 byte (1 in 128 draws when only the sign bit
 * was cleared) is "illegal padding" to OpenSSL, which then refused about one certificate in 256.
 */
export function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes.toString('hex');
}

const generateKeyPairAsync = promisify(generateKeyPair);

interface KeyMaterial {
  privateKey: KeyObject;
  spkiDer: Buffer;
  privatePem: string;
  publicPem: string;
}

/** The PEM upstream writes for a private key: PKCS#1 for RSA (EncodePrivateKeyPEM), SEC1 for ECDSA. */
function privateKeyPem(key: KeyObject): string {
  return key.export({ type: key.asymmetricKeyType === 'rsa' ? 'pkcs1' : 'sec1', format: 'pem' }) as string;
}

/** A key pair from node:crypto (native, on libuv's thread pool). */
async function keyMaterial(algorithm: KeyAlgorithm): Promise<KeyMaterial> {
  const { publicKey, privateKey } =
    algorithm === 'ecdsa-p256' ? await generateKeyPairAsync('ec', { namedCurve: 'prime256v1' }) : await generateKeyPairAsync('rsa', { modulusLength: 2048 });
  return {
    privateKey,
    spkiDer: publicKey.export({ type: 'spki', format: 'der' }),
    privatePem: privateKeyPem(privateKey),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
  };
}

const signatureOf = (key: KeyObject): KeyAlgorithm | undefined =>
  key.asymmetricKeyType === 'rsa'
    ? 'rsa-2048'
    : key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
      ? 'ecdsa-p256'
      : undefined;

/**
 * Parses and checks the existing root CA; returns the reason it cannot be used, or the issuer. Under RSA (the
 * default) a root the vc-manager could not read is refused too: an ECDSA key, or one not in PKCS#1 — except an RSA
 * key in PKCS#8, which is kept and only re-encoded (`reencoded`), so trust in the root does not change.
 */
export async function loadRootCa(
  data: Record<string, string> | undefined,
  now = Date.now(),
  algorithm: KeyAlgorithm = DEFAULT_KEY_ALGORITHM,
): Promise<(Issuer & { reencoded?: Record<string, string> }) | string> {
  const certPem = fromB64(data?.['tls.crt']);
  const keyPem = fromB64(data?.['tls.key']);
  if (!certPem || !keyPem) return 'root-ca has no tls.crt/tls.key';
  let cert: NodeX509;
  let keyObject: KeyObject;
  try {
    cert = new NodeX509(certPem);
    keyObject = createPrivateKey(keyPem);
  } catch (error) {
    return `root-ca is not a PEM certificate and key (${(error as Error).message})`;
  }
  if (!cert.ca) return 'root-ca is not a CA certificate';
  if (Date.parse(cert.validTo) <= now) return `root-ca expired at ${cert.validTo}`;
  if (!cert.checkPrivateKey(keyObject)) return 'root-ca key does not match its certificate';
  const signature = signatureOf(keyObject);
  const curve = keyObject.asymmetricKeyDetails?.namedCurve;
  if (!signature) return `root-ca key type ${keyObject.asymmetricKeyType}${curve ? ` ${curve}` : ''} is not supported`;
  if (algorithm === 'rsa-2048' && signature !== 'rsa-2048') return 'root-ca key is ECDSA; the vc-manager reads root-ca only as a PKCS#1 RSA key';
  const issuer = { ca: certificateAuthority(cert.raw, keyObject, signature), certPem };
  if (signature === 'rsa-2048' && !keyPem.includes('-----BEGIN RSA PRIVATE KEY-----')) {
    return { ...issuer, reencoded: { 'tls.crt': data!['tls.crt']!, 'tls.key': b64(privateKeyPem(keyObject)) } };
  }
  return issuer;
}

/** client-go's NewSelfSignedCACert with upstream's root subject. */
async function newRootCa(algorithm: KeyAlgorithm, now: number): Promise<{ issuer: Issuer; data: Record<string, string> }> {
  const keys = await keyMaterial(algorithm);
  const der = issueCertificate(
    undefined,
    {
      subject: [
        ['O', ROOT_CA_ORGANIZATION],
        ['CN', ROOT_CA_COMMON_NAME],
      ],
      publicKeySpki: keys.spkiDer,
      serialNumber: Buffer.from(serial(), 'hex'),
      notBefore: new Date(now),
      notAfter: new Date(now + ROOT_CA_DAYS * DAY_MS),
      ca: true,
      keyUsage: KEY_ENCIPHERMENT | DIGITAL_SIGNATURE | KEY_CERT_SIGN,
      extendedKeyUsage: [],
      dns: [ROOT_CA_COMMON_NAME],
      ips: [],
    },
    { key: keys.privateKey, signature: algorithm },
  );
  const certPem = certificatePem(der);
  return {
    issuer: { ca: certificateAuthority(der, keys.privateKey, algorithm), certPem },
    data: { 'tls.crt': b64(certPem), 'tls.key': b64(keys.privatePem) },
  };
}

interface LeafRequest {
  subject: ['CN' | 'O', string][];
  usages: ('server' | 'client')[];
  dns?: string[];
  ips?: string[];
}

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
// asn1-x509's KeyUsageFlags bits.
const DIGITAL_SIGNATURE = 1;
const KEY_ENCIPHERMENT = 4;
const KEY_CERT_SIGN = 32;

/** util/pki NewCertAndKey: a new key and a certificate for it, signed by the root. */
async function issue(issuer: Issuer, algorithm: KeyAlgorithm, request: LeafRequest, days: number, now: number): Promise<{ certPem: string; keyPem: string }> {
  const keys = await keyMaterial(algorithm);
  const der = issueCertificate(issuer.ca, {
    subject: request.subject,
    publicKeySpki: keys.spkiDer,
    serialNumber: Buffer.from(serial(), 'hex'),
    notBefore: issuer.ca.notBefore,
    notAfter: new Date(now + days * DAY_MS),
    ca: false,
    keyUsage: KEY_ENCIPHERMENT | DIGITAL_SIGNATURE,
    extendedKeyUsage: request.usages.map((u) => (u === 'server' ? SERVER_AUTH : CLIENT_AUTH)),
    dns: request.dns ?? [],
    ips: request.ips ?? [],
  });
  return { certPem: certificatePem(der), keyPem: keys.privatePem };
}

/** Upstream's kubeconfig template (controller/kubeconfig), field for field. */
function kubeconfig(cluster: string, address: string, caPem: string, user: string, certPem: string, keyPem: string): string {
  const server = address.includes(':') ? `https://[${address}]:${KUBECONFIG_PORT}` : `https://${address}:${KUBECONFIG_PORT}`;
  return `
kind: Config
apiVersion: v1
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(certPem)}
    client-key-data: ${b64(keyPem)}
clusters:
- name: ${cluster}
  cluster:
    certificate-authority-data: ${b64(caPem)}
    server: ${server}
contexts:
- context:
    cluster: ${cluster}
    user: ${user}
  name: default
current-context: default
preferences: {}
`;
}

/** The etcd serving certificate's DNS names: each replica and the Service, then each again with `.<namespace>`. */
export function etcdDnsNames(input: Pick<ClusterPkiInput, 'etcdServiceName' | 'etcdStatefulSetName' | 'etcdReplicas' | 'clusterNamespace'>): string[] {
  const replicas = Array.from({ length: Math.max(0, input.etcdReplicas) }, (_, i) => `${input.etcdStatefulSetName}-${i}.${input.etcdServiceName}`);
  const names = [...replicas, input.etcdServiceName];
  return [...names, ...names.map((n) => `${n}.${input.clusterNamespace}`)];
}

/** The apiserver serving certificate's DNS names, in upstream's order. */
export function apiserverDnsNames(
  input: Pick<ClusterPkiInput, 'clusterName' | 'clusterNamespace' | 'clusterDomain' | 'apiserverServiceName' | 'externalApiserverDomain'>,
): string[] {
  const domain = input.clusterDomain || 'cluster.local';
  return [
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    `kubernetes.default.svc.${domain}`,
    `${input.apiserverServiceName}.${input.clusterNamespace}`,
    input.clusterName,
    ...(input.externalApiserverDomain !== undefined ? [input.externalApiserverDomain] : []),
  ];
}

/**
 * Keeps the root CA when it is usable (else generates one and says why), and issues every other secret anew.
 * Pure computation: writing the secrets is the caller's job.
 */
export async function generateClusterPki(input: ClusterPkiInput, options: PkiOptions = {}): Promise<ClusterPki> {
  const now = options.now ?? Date.now();
  const algorithm = options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM;
  const loaded = await loadRootCa(input.rootCaData, now, algorithm);
  let issuer: Issuer;
  let rootCa: Record<string, string>;
  let rootCaProblem: string | undefined;
  let rootCaReencoded = false;
  if (typeof loaded === 'string') {
    rootCaProblem = loaded;
    const created = await newRootCa(algorithm, now);
    issuer = created.issuer;
    rootCa = created.data;
  } else {
    issuer = loaded;
    rootCa = loaded.reencoded ?? input.rootCaData!;
    rootCaReencoded = loaded.reencoded !== undefined;
  }
  const caPem = issuer.certPem;
  const days = input.expireDays && input.expireDays > 0 ? input.expireDays : LEAF_DAYS;
  const clusterIP = input.apiserverClusterIP && input.apiserverClusterIP !== 'None' ? input.apiserverClusterIP : undefined;
  // The kubeconfigs dial the ClusterIP when there is one, else `<svc>.<ns>` (finalAPIAddress).
  const address = clusterIP ?? `${input.apiserverServiceName}.${input.clusterNamespace}`;

  const [etcd, frontProxy, apiserver, controllerManager, admin, serviceAccount] = await Promise.all([
    issue(issuer, algorithm, { subject: [['CN', 'kube-etcd']], usages: ['server', 'client'], dns: etcdDnsNames(input), ips: ['127.0.0.1'] }, days, now),
    issue(issuer, algorithm, { subject: [['CN', 'front-proxy-client']], usages: ['client'] }, days, now),
    issue(
      issuer,
      algorithm,
      { subject: [['CN', input.clusterNamespace]], usages: ['server', 'client'], dns: apiserverDnsNames(input), ips: clusterIP ? [clusterIP] : [] },
      days,
      now,
    ),
    issue(issuer, algorithm, { subject: [['CN', 'system:kube-controller-manager']], usages: ['client'] }, days, now),
    issue(
      issuer,
      algorithm,
      {
        subject: [
          ['CN', 'admin'],
          ['O', 'system:masters'],
        ],
        usages: ['client'],
      },
      days,
      now,
    ),
    keyMaterial(algorithm),
  ]);
  const tls = (pair: { certPem: string; keyPem: string }) => ({ 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem) });
  return {
    rootCa,
    rootCaGenerated: rootCaProblem !== undefined,
    ...(rootCaProblem !== undefined ? { rootCaProblem } : {}),
    ...(rootCaReencoded ? { rootCaReencoded } : {}),
    secrets: {
      'apiserver-ca': tls(apiserver),
      'etcd-ca': tls(etcd),
      'front-proxy-ca': tls(frontProxy),
      'controller-manager-kubeconfig': {
        'controller-manager-kubeconfig': b64(
          kubeconfig(input.clusterName, address, caPem, 'system:kube-controller-manager', controllerManager.certPem, controllerManager.keyPem),
        ),
      },
      'admin-kubeconfig': { 'admin-kubeconfig': b64(kubeconfig(input.clusterName, address, caPem, 'admin', admin.certPem, admin.keyPem)) },
      // As upstream's RsaKeyToSecret: a kubernetes.io/tls Secret whose tls.crt holds the public key (the apiserver reads
      // tls.key for --service-account-key-file); other keys would fail that type's validation or be ignored.
      'serviceaccount-rsa': tls({ certPem: serviceAccount.publicPem, keyPem: serviceAccount.privatePem }),
    },
    warnings: algorithm === 'ecdsa-p256' ? [ECDSA_WARNING] : [],
  };
}
