import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';

/**
 * The TLS data of a member kubeconfig (`certificate-authority-data`, `client-certificate-data`, `client-key-data`),
 * checked at registration the way the connection will read it (base64 of PEM, as client-node decodes it), so that a
 * key that is not one is refused with the field's name instead of a member UNREACHABLE with ERR_OSSL_UNSUPPORTED
 * (attack 14, F8). Each function answers what is wrong, in words that name no part of the data, or undefined.
 *
 * Parsing an RSA key costs about 0.7 ms and a sync pass reads every kubeconfig again (every
 * ROLLPLANE_MEMBER_CLUSTER_SYNC_MS): data that parsed once is remembered by its digest, so a thousand unchanged
 * members cost a thousand hashes per pass, not a second of the event loop.
 */

const parsed = new Set<string>();
const REMEMBERED = 10_000;

function remembered(kind: string, ...data: string[]): { known: boolean; remember: () => void } {
  const digest = createHash('sha256').update(kind).update('\0').update(data.join('\0')).digest('base64');
  return {
    known: parsed.has(digest),
    remember: () => {
      if (parsed.size >= REMEMBERED) parsed.clear();
      parsed.add(digest);
    },
  };
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g;

function decoded(data: unknown): string | undefined {
  return typeof data === 'string' ? Buffer.from(data, 'base64').toString('latin1') : undefined;
}

/** The certificates of `data` (one or more PEM blocks, as a CA bundle has), or undefined when one does not parse. */
function certificates(data: unknown): X509Certificate[] | undefined {
  const pem = decoded(data);
  const blocks = pem?.match(CERTIFICATE_BLOCK);
  if (!blocks) return undefined;
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch {
    return undefined;
  }
}

function privateKey(data: unknown): KeyObject | undefined {
  const pem = decoded(data);
  if (!pem?.includes('-----BEGIN ')) return undefined;
  try {
    return createPrivateKey(pem);
  } catch {
    return undefined;
  }
}

function matches(certificate: X509Certificate, key: KeyObject): boolean {
  try {
    return certificate.checkPrivateKey(key);
  } catch {
    return false;
  }
}

/** `certificate-authority-data`: one or more certificates. */
export function authorityProblem(data: unknown): string | undefined {
  const memo = remembered('ca', String(data));
  if (memo.known) return undefined;
  if (!certificates(data)) return 'has certificate-authority-data that is not a certificate in PEM';
  memo.remember();
  return undefined;
}

/** `client-certificate-data` and `client-key-data` (either may be absent): each parses, and the key is the certificate's. */
export function clientProblem(certData: unknown, keyData: unknown): string | undefined {
  const memo = remembered('client', String(certData), String(keyData));
  if (memo.known) return undefined;
  const certs = certData === undefined ? [] : certificates(certData);
  if (!certs) return 'has client-certificate-data that is not a certificate in PEM';
  const key = keyData === undefined ? undefined : privateKey(keyData);
  if (keyData !== undefined && !key) return 'has client-key-data that is not a private key in PEM';
  if (certs[0] && key && !matches(certs[0], key)) return 'has client-key-data that is not the key of its client-certificate-data';
  memo.remember();
  return undefined;
}
