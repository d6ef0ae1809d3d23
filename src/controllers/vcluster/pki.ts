/**
 * The tenant control plane's PKI, as upstream's native provisioner lays it out in the cluster namespace: a root CA
 * (`root-ca`, kept across upgrades) and, signed by it, the apiserver serving certificate (`apiserver-ca`), the etcd
 * serving certificate (`etcd-ca`), the front-proxy CA (`front-proxy-ca`), client certificates inside two kubeconfigs
 * (`controller-manager-kubeconfig`, `admin-kubeconfig`) and the service-account signing key pair
 * (`serviceaccount-rsa`). Real X.509 (@peculiar/x509 over Node's WebCrypto), so the secrets can be inspected with
 * openssl and verified against the root.
 *
 * Keys are ECDSA P-256 by default: kube-apiserver accepts ECDSA serving, client and service-account keys, and an RSA
 * 2048 key costs ~100 ms of CPU each (six per cluster), which would dominate a fleet upgrade. `keyAlgorithm: 'rsa-2048'`
 * gives upstream's RSA keys. The secret keeps upstream's name `serviceaccount-rsa` whatever the algorithm.
 */
import 'reflect-metadata'; // @peculiar/x509's dependency injection (tsyringe) needs the Reflect polyfill loaded first
import { createPrivateKey, generateKeyPair, randomBytes, webcrypto, X509Certificate as NodeX509 } from 'node:crypto';
import { promisify } from 'node:util';
import * as x509 from '@peculiar/x509';
import { certificateAuthority, certificatePem, issueCertificate } from './certificates.js';
import type { CertificateAuthority } from './certificates.js';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as never);
const subtle = webcrypto.subtle;

export type KeyAlgorithm = 'ecdsa-p256' | 'rsa-2048';

const ALGORITHMS: Record<KeyAlgorithm, webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams> = {
  'ecdsa-p256': { name: 'ECDSA', namedCurve: 'P-256' },
  'rsa-2048': { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
};
const SIGNING: Record<KeyAlgorithm, webcrypto.EcdsaParams | webcrypto.RsaHashedImportParams> = {
  'ecdsa-p256': { name: 'ECDSA', hash: 'SHA-256' },
  'rsa-2048': { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
};

const ROOT_CA_DAYS = 3650;
const DAY_MS = 86_400_000;
/** Issued certificates are valid from a little in the past, for clock skew between hosts. */
const BACKDATE_MS = 5 * 60_000;

export interface ClusterPkiInput {
  /** The VirtualCluster's name (goes into subjects). */
  clusterName: string;
  /** Where the control plane runs. */
  clusterNamespace: string;
  /** Tenant cluster DNS domain (VirtualCluster spec.clusterDomain), default cluster.local. */
  clusterDomain?: string;
  /** Validity of issued certificates (spec.pkiExpireDays), default 365. */
  expireDays?: number;
  apiserverServiceName: string;
  apiserverPort: number;
  /** The apiserver Service's ClusterIP, put into the serving certificate's IP SANs when known. */
  apiserverClusterIP?: string;
  etcdServiceName: string;
  etcdStatefulSetName: string;
  etcdReplicas: number;
  /** The current `root-ca` secret data (base64 values), if any. */
  rootCaData?: Record<string, string>;
}

export interface ClusterPki {
  /** root-ca secret data: the existing one, or a new CA when there was none or it was not a usable CA. */
  rootCa: Record<string, string>;
  rootCaGenerated: boolean;
  /** Why a new root CA was generated (missing, unparsable, expired, key mismatch). */
  rootCaProblem?: string;
  /** Secret name → data (base64 values), for every secret in REGENERATED_SECRETS. */
  secrets: Record<string, Record<string, string>>;
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
  bytes[0] = (bytes[0]! & 0x7f) || 0x01;
  return bytes.toString('hex');
}

async function keyPair(algorithm: KeyAlgorithm): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(ALGORITHMS[algorithm], true, ['sign', 'verify'])) as CryptoKeyPair;
}

const generateKeyPairAsync = promisify(generateKeyPair);

interface KeyMaterial {
  spkiDer: Buffer;
  privatePem: string;
  publicPem: string;
}

/**
 * A key pair from node:crypto (native, on the thread pool): several times cheaper than WebCrypto's generateKey +
 * exportKey, which matters at six keys per cluster. Only the issuer's key goes through WebCrypto (to sign).
 */
async function keyMaterial(algorithm: KeyAlgorithm): Promise<KeyMaterial> {
  const { publicKey, privateKey } =
    algorithm === 'ecdsa-p256' ? await generateKeyPairAsync('ec', { namedCurve: 'prime256v1' }) : await generateKeyPairAsync('rsa', { modulusLength: 2048 });
  return {
    spkiDer: publicKey.export({ type: 'spki', format: 'der' }),
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
  };
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await subtle.exportKey('pkcs8', key));
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Parses and checks the existing root CA; returns the reason it cannot be used, or the issuer. */
export async function loadRootCa(data: Record<string, string> | undefined, now = Date.now()): Promise<Issuer | string> {
  const certPem = fromB64(data?.['tls.crt']);
  const keyPem = fromB64(data?.['tls.key']);
  if (!certPem || !keyPem) return 'root-ca has no tls.crt/tls.key';
  let cert: NodeX509;
  let keyObject: ReturnType<typeof createPrivateKey>;
  try {
    cert = new NodeX509(certPem);
    keyObject = createPrivateKey(keyPem);
  } catch (error) {
    return `root-ca is not a PEM certificate and key (${(error as Error).message})`;
  }
  if (!cert.ca) return 'root-ca is not a CA certificate';
  if (Date.parse(cert.validTo) <= now) return `root-ca expired at ${cert.validTo}`;
  if (!cert.checkPrivateKey(keyObject)) return 'root-ca key does not match its certificate';
  const type = keyObject.asymmetricKeyType;
  const curve = keyObject.asymmetricKeyDetails?.namedCurve;
  const algorithm: KeyAlgorithm | undefined = type === 'rsa' ? 'rsa-2048' : type === 'ec' && curve === 'prime256v1' ? 'ecdsa-p256' : undefined;
  if (!algorithm) return `root-ca key type ${type}${curve ? ` ${curve}` : ''} is not supported`;
  return { ca: certificateAuthority(cert.raw, keyObject, algorithm), certPem };
}

async function newRootCa(clusterName: string, algorithm: KeyAlgorithm, now: number): Promise<{ issuer: Issuer; data: Record<string, string> }> {
  const keys = await keyPair(algorithm);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=kubernetes-ca,O=${escapeDn(clusterName)}`,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + ROOT_CA_DAYS * DAY_MS),
    keys,
    signingAlgorithm: SIGNING[algorithm],
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = certificate.toString('pem');
  const keyPem = await privateKeyPem(keys.privateKey);
  return {
    issuer: { ca: certificateAuthority(Buffer.from(certificate.rawData), createPrivateKey(keyPem), algorithm), certPem },
    data: { 'tls.crt': b64(certPem), 'tls.key': b64(keyPem) },
  };
}

function escapeDn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, '\\$1');
}

interface LeafRequest {
  subject: [('CN' | 'O'), string][];
  days: number;
  ca?: boolean;
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
const CRL_SIGN = 64;

async function issue(issuer: Issuer, algorithm: KeyAlgorithm, request: LeafRequest, now: number): Promise<{ certPem: string; keyPem: string }> {
  const keys = await keyMaterial(algorithm);
  const der = issueCertificate(issuer.ca, {
    subject: request.subject,
    publicKeySpki: keys.spkiDer,
    serialNumber: Buffer.from(serial(), 'hex'),
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + request.days * DAY_MS),
    ca: request.ca === true,
    keyUsage: request.ca ? KEY_CERT_SIGN | CRL_SIGN | DIGITAL_SIGNATURE : DIGITAL_SIGNATURE | KEY_ENCIPHERMENT,
    extendedKeyUsage: request.ca ? [] : request.usages.map((u) => (u === 'server' ? SERVER_AUTH : CLIENT_AUTH)),
    dns: request.dns ?? [],
    ips: request.ips ?? [],
  });
  return { certPem: certificatePem(der), keyPem: keys.privatePem };
}

/** A kubeconfig; JSON (a subset of YAML, so kubectl and client libraries read it) because it is ~10× cheaper to write. */
function kubeconfig(cluster: string, server: string, caPem: string, user: string, certPem: string, keyPem: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: cluster, cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: user, user: { 'client-certificate-data': b64(certPem), 'client-key-data': b64(keyPem) } }],
    contexts: [{ name: `${user}@${cluster}`, context: { cluster, user } }],
    'current-context': `${user}@${cluster}`,
  });
}

/**
 * Keeps the root CA when it is a usable CA (else generates one and says why), and issues every other secret anew.
 * Pure computation: writing the secrets is the caller's job.
 */
export async function generateClusterPki(input: ClusterPkiInput, options: PkiOptions = {}): Promise<ClusterPki> {
  const now = options.now ?? Date.now();
  const algorithm = options.keyAlgorithm ?? 'ecdsa-p256';
  const loaded = await loadRootCa(input.rootCaData, now);
  let issuer: Issuer;
  let rootCa: Record<string, string>;
  let rootCaProblem: string | undefined;
  if (typeof loaded === 'string') {
    rootCaProblem = loaded;
    const created = await newRootCa(input.clusterName, algorithm, now);
    issuer = created.issuer;
    rootCa = created.data;
  } else {
    issuer = loaded;
    rootCa = input.rootCaData!;
  }
  const caPem = issuer.certPem;
  const days = input.expireDays && input.expireDays > 0 ? input.expireDays : 365;
  const ns = input.clusterNamespace;
  const domain = input.clusterDomain || 'cluster.local';
  const svc = input.apiserverServiceName;
  const serviceNames = (name: string) => [name, `${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.${domain}`];
  const etcdPeers = Array.from({ length: Math.max(1, input.etcdReplicas) }, (_, i) => `${input.etcdStatefulSetName}-${i}.${input.etcdServiceName}.${ns}`);
  const server = `https://${svc}.${ns}:${input.apiserverPort}`;

  const [apiserver, etcd, frontProxy, controllerManager, admin, serviceAccount] = await Promise.all([
    issue(issuer, algorithm, {
      subject: [['CN', 'kube-apiserver']],
      days,
      usages: ['server', 'client'],
      dns: [...serviceNames(svc), 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${domain}`, 'localhost'],
      ips: [...(input.apiserverClusterIP && input.apiserverClusterIP !== 'None' ? [input.apiserverClusterIP] : []), '127.0.0.1'],
    }, now),
    issue(issuer, algorithm, {
      subject: [['CN', 'etcd']],
      days,
      usages: ['server', 'client'],
      dns: [...serviceNames(input.etcdServiceName), ...etcdPeers, 'localhost'],
      ips: ['127.0.0.1'],
    }, now),
    issue(issuer, algorithm, { subject: [['CN', 'front-proxy-ca']], days, ca: true, usages: [] }, now),
    issue(issuer, algorithm, { subject: [['CN', 'system:kube-controller-manager']], days, usages: ['client'] }, now),
    issue(issuer, algorithm, { subject: [['CN', 'admin'], ['O', 'system:masters']], days, usages: ['client'] }, now),
    keyMaterial(algorithm),
  ]);
  const tls = (pair: { certPem: string; keyPem: string }) => ({ 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem) });
  return {
    rootCa,
    rootCaGenerated: rootCaProblem !== undefined,
    ...(rootCaProblem !== undefined ? { rootCaProblem } : {}),
    secrets: {
      'apiserver-ca': tls(apiserver),
      'etcd-ca': tls(etcd),
      'front-proxy-ca': tls(frontProxy),
      'controller-manager-kubeconfig': {
        'controller-manager-kubeconfig': b64(kubeconfig(input.clusterName, server, caPem, 'system:kube-controller-manager', controllerManager.certPem, controllerManager.keyPem)),
      },
      'admin-kubeconfig': { 'admin-kubeconfig': b64(kubeconfig(input.clusterName, server, caPem, 'admin', admin.certPem, admin.keyPem)) },
      // As upstream's RsaKeyToSecret: a kubernetes.io/tls Secret whose tls.crt holds the public key (the apiserver reads
      // tls.key for --service-account-key-file); other keys would fail that type's validation or be ignored.
      'serviceaccount-rsa': tls({ certPem: serviceAccount.publicPem, keyPem: serviceAccount.privatePem }),
    },
  };
}
